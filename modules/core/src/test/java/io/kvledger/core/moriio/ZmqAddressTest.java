package io.kvledger.core.moriio;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ZmqAddressTest {

    private static ZmqAddress ok(String s) {
        Checked<ZmqAddress> r = ZmqAddress.parse(s);
        assertThat(r.isOk()).as("parse %s: %s", s, r.error()).isTrue();
        return r.value();
    }

    @Test
    void parses_canonical_address() {
        assertThat(ok("host:10.0.0.1,handshake:6301,notify:61005"))
                .isEqualTo(new ZmqAddress("10.0.0.1", 6301, 61005));
    }

    @Test
    void ipv6_host_is_split_on_first_colon_only() {
        assertThat(ok("host:::1,handshake:6301,notify:61005"))
                .isEqualTo(new ZmqAddress("::1", 6301, 61005));
        assertThat(ok("host:fe80::1:2,handshake:1,notify:2").host()).isEqualTo("fe80::1:2");
    }

    @Test
    void keys_and_values_are_stripped() {
        assertThat(ok(" host : 10.0.0.1 ,\thandshake:\t6301 , notify :61005\n"))
                .isEqualTo(new ZmqAddress("10.0.0.1", 6301, 61005));
    }

    @Test
    void key_order_does_not_matter_and_extra_keys_are_ignored() {
        assertThat(ok("notify:2,extra:x,handshake:1,host:h"))
                .isEqualTo(new ZmqAddress("h", 1, 2));
    }

    @Test
    void later_duplicate_key_overwrites_earlier() {
        assertThat(ok("host:a,handshake:1,notify:2,host:b,notify:3"))
                .isEqualTo(new ZmqAddress("b", 1, 3));
        // An overwrite can also make a good port bad, as with a Python dict.
        assertThat(ZmqAddress.parse("host:a,handshake:1,notify:2,notify:x").isOk()).isFalse();
    }

    @Test
    void ports_follow_python_int_syntax() {
        assertThat(ok("host:h,handshake:+6301,notify:0061005"))
                .isEqualTo(new ZmqAddress("h", 6301, 61005));
        assertThat(ok("host:h,handshake:6_301,notify:-1"))
                .isEqualTo(new ZmqAddress("h", 6301, -1));
    }

    @Test
    void empty_host_is_accepted_as_python_does() {
        assertThat(ok("host:,handshake:1,notify:2").host()).isEmpty();
    }

    @Test
    void segment_without_colon_is_a_key_with_empty_value() {
        // "host" alone gives parts["host"] = "" (str.partition), so the address still parses.
        assertThat(ok("host,handshake:1,notify:2").host()).isEmpty();
        // "handshake" alone gives an empty port, which int("") rejects.
        assertThat(ZmqAddress.parse("host:h,handshake,notify:2").isOk()).isFalse();
    }

    @Test
    void missing_key_is_malformed() {
        Checked<ZmqAddress> r = ZmqAddress.parse("host:10.0.0.1,handshake:6301");
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).isEqualTo("Malformed zmq_address 'host:10.0.0.1,handshake:6301': "
                + "expected 'host:IP,handshake:PORT,notify:PORT' format");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "host:h,handshake:abc,notify:2",
        "host:h,handshake:1.0,notify:2",
        "host:h,handshake:,notify:2",
        "host:h,handshake:0x10,notify:2",
        "host:h,handshake:1__0,notify:2",
        "host:h,handshake:_1,notify:2",
        "host:h,handshake:+ 1,notify:2",
        "host:h,handshake:1,notify:99999999999",
        "",
        "garbage",
    })
    void non_int_port_or_missing_keys_are_malformed(String s) {
        Checked<ZmqAddress> r = ZmqAddress.parse(s);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).startsWith("Malformed zmq_address ");
    }

    @Test
    void malformed_message_uses_python_repr_quoting() {
        assertThat(ZmqAddress.parse("it's").error()).startsWith("Malformed zmq_address \"it's\":");
        assertThat(ZmqAddress.parse("a\nb").error()).startsWith("Malformed zmq_address 'a\\nb':");
    }

    @Test
    void format_round_trips() {
        ZmqAddress a = new ZmqAddress("10.0.0.2", 6301, 61007);
        assertThat(a.format()).isEqualTo("host:10.0.0.2,handshake:6301,notify:61007");
        assertThat(ok(a.format())).isEqualTo(a);
        ZmqAddress v6 = new ZmqAddress("::1", 1, 2);
        assertThat(ok(v6.format())).isEqualTo(v6);
    }
}
