package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class HostPortTest {

    @Test
    void takesTheHostAndThePortAfterTheLastColon() {
        assertThat(HostPort.parse("--http", "127.0.0.1:8088")).isEqualTo(new HostPort("127.0.0.1", 8088));
        assertThat(HostPort.parse("--metrics", "0.0.0.0:0")).isEqualTo(new HostPort("0.0.0.0", 0));
        assertThat(HostPort.parse("--http", "localhost: 65535 ")).isEqualTo(new HostPort("localhost", 65_535));
    }

    @Test
    void anIpv6HostLosesItsBracketsAndRegainsThemInAUrl() {
        HostPort v6 = HostPort.parse("--metrics", "[::1]:9400");
        assertThat(v6).isEqualTo(new HostPort("::1", 9400));
        assertThat(v6.urlHost()).isEqualTo("[::1]");
        assertThat(new HostPort("127.0.0.1", 1).urlHost()).isEqualTo("127.0.0.1");
    }

    @Test
    void aValueWithoutHostOrPortNamesTheOptionAndTheValue() {
        assertThatThrownBy(() -> HostPort.parse("--metrics", "nowhere"))
                .hasMessage("--metrics takes HOST:PORT, got nowhere");
        assertThatThrownBy(() -> HostPort.parse("--http", ":8088"))
                .hasMessage("--http takes HOST:PORT, got :8088");
        assertThatThrownBy(() -> HostPort.parse("--http", "127.0.0.1:99999"))
                .hasMessage("--http needs a port from 0 to 65535, got 99999");
        assertThatThrownBy(() -> HostPort.parse("--metrics", "127.0.0.1:http"))
                .hasMessage("--metrics needs a port from 0 to 65535, got http");
        assertThatThrownBy(() -> HostPort.parse("--metrics", "127.0.0.1:-1"))
                .hasMessage("--metrics needs a port from 0 to 65535, got -1");
    }
}
