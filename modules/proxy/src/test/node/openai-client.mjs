// The official OpenAI client (the `openai` npm package) against kvledger proxy, run by
// OpenAiClientTest: node openai-client.mjs BASE_URL [failing]. Prints one JSON object: what each
// call returned (or the error the client raised), for the test to check. With `failing`, only one
// completion and one chat completion (the test has made an engine fail).
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'k-test', maxRetries: 0, timeout: 120_000 });
const out = {};

async function attempt(name, fn) {
  try {
    out[name] = { ok: await fn() };
  } catch (e) {
    out[name] = {
      error: {
        class: e?.constructor?.name, status: e?.status, message: e?.message,
        type: e?.type, param: e?.param, code: e?.code, body: e?.error,
      },
    };
  }
}

if (process.argv[3] === 'failing') {
  await attempt('completion', () => client.completions.create({ model: 'fake-model', prompt: 'hi', max_tokens: 4 }));
  await attempt('chatStream', async () => {
    const s = await client.chat.completions.create({
      model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true });
    for await (const c of s) { /* none expected */ }
    return 'streamed';
  });
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

await attempt('models', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push({ id: m.id, object: m.object, owned_by: m.owned_by });
  return ids;
});
await attempt('completion', async () => {
  const r = await client.completions.create({ model: 'fake-model', prompt: 'hi', max_tokens: 4 });
  return { object: r.object, text: r.choices[0].text, finish: r.choices[0].finish_reason };
});
await attempt('completionStream', async () => {
  const s = await client.completions.create({ model: 'fake-model', prompt: 'hi', max_tokens: 4, stream: true });
  let text = '', chunks = 0;
  for await (const c of s) { chunks++; text += c.choices[0]?.text ?? ''; }
  return { chunks, text };
});
await attempt('chat', async () => {
  const r = await client.chat.completions.create({
    model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
  return { object: r.object, content: r.choices[0].message.content, finish: r.choices[0].finish_reason };
});
await attempt('chatStream', async () => {
  const s = await client.chat.completions.create({
    model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true });
  let text = '', chunks = 0;
  for await (const c of s) { chunks++; text += c.choices[0]?.delta?.content ?? ''; }
  return { chunks, text };
});
// errors: one the proxy's checks refuse, one route it does not serve
await attempt('badRequest', () => client.chat.completions.create({ model: 'fake-model', messages: [] }));
await attempt('notFound', () => client.models.retrieve('fake-model'));

process.stdout.write(JSON.stringify(out) + '\n');
