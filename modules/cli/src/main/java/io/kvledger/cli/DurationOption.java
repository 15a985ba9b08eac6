package io.kvledger.cli;

import io.kvledger.ledger.text.DurationText;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The converter of every option that takes a duration: {@code 30s}, {@code 5m}, {@code 250ms}, or
 * plain seconds ({@link DurationText}); the option's field holds seconds. Anything else is a
 * usage error naming the forms. {@link Millis} is the same for an option in milliseconds
 * ({@code --...-ms}), where a plain number is milliseconds.
 */
final class DurationOption implements ITypeConverter<Double> {

    @Override
    public Double convert(String value) {
        try {
            return DurationText.parseSeconds(value);
        } catch (IllegalArgumentException e) {
            throw new TypeConversionException(e.getMessage());
        }
    }

    /** An option in milliseconds: {@code 200}, {@code 200ms}, {@code 1s}; the field holds milliseconds. */
    static final class Millis implements ITypeConverter<Double> {
        @Override
        public Double convert(String value) {
            try {
                return DurationText.parseMillis(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
