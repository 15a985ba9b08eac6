package io.kvledger.cli;

import io.kvledger.sim.FaultSpec;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** The {@code --faults SPEC} option shared by {@code demo} and {@code simulate}. */
final class FaultSpecOption {

    private FaultSpecOption() {}

    /** The second line of the option's help: every key and what it applies to. */
    static final String KEYS_HELP = "Keys: drop, dup, delay, reorder, send-fail (per notify frame), fail, stall "
            + "(per transfer), handshake-fail (per handshake), abort (per request).";

    /** Parses a spec; a bad one is a usage error naming the offending token. */
    static final class Converter implements ITypeConverter<FaultSpec> {
        @Override
        public FaultSpec convert(String value) {
            try {
                return FaultSpec.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
