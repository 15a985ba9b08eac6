/**
 * The journal's type registry and payload schemas: the permanent numeric type id, name, kind and
 * one-line text dissector of every entry type ({@link io.kvledger.journal.format.EntryType}), and
 * how each payload is written as msgpack (an array of fields, append-only) and as a JSON object
 * (snake_case field names after the MoRIIO hook arguments).
 *
 * <p>One schema per type serves the msgpack codec, the JSON-lines mapping, the dissectors and the
 * generated field tables of {@code journal/FORMAT.md}, so that the three cannot drift apart.
 * {@link io.kvledger.journal.format.FastPayloadReader} reads well-formed payloads through the same
 * schemas and builders without msgpack-core's unpacker (for long passes: replay, hangs) and leaves
 * everything else to the generic reader.
 *
 * <p>Python values (params, transfer ids) are packed and read by the wire module's one codec,
 * {@code io.kvledger.wire.PyValues}; {@link io.kvledger.journal.format.PyJson} gives their JSON
 * form and reports what the codec refuses to read as a damaged payload.
 *
 * <p>Depends on {@code io.kvledger.core} (event, effect, model), {@code io.kvledger.wire} (the
 * Python-value codec), msgpack-core and {@code io.kvledger.journal.json}; nothing here knows about
 * Chronicle Queue or files.
 */
package io.kvledger.journal.format;
