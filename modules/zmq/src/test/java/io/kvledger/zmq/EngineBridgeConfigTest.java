package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** How {@link EngineBridgeConfig} reads an {@code ipc://} endpoint (ZMTP over a Unix socket), as libzmq does. */
class EngineBridgeConfigTest {

    @Test
    void anAbsoluteIpcPathIsKeptAndNamesTheSocketFile() {
        EngineBridgeConfig c = EngineBridgeConfig.forEndpoint("ipc:///run/user/1000/node.ipc");
        assertThat(c.bindEndpoint()).isEqualTo("ipc:///run/user/1000/node.ipc");
        assertThat(c.isIpc()).isTrue();
        assertThat(c.isUnix()).isFalse();
        assertThat(c.socketPath()).isEqualTo(Path.of("/run/user/1000/node.ipc"));
        assertThat(EngineBridgeConfig.forEndpoint("unix:///run/user/1000/node.sock").socketPath())
                .isEqualTo(Path.of("/run/user/1000/node.sock"));
    }

    @Test
    void aRelativeIpcPathIsTheWorkingDirectorysAndReportedAbsolute() {
        Path cwd = Path.of(System.getProperty("user.dir"));
        EngineBridgeConfig c = EngineBridgeConfig.forEndpoint("ipc://run/node.ipc");
        assertThat(c.socketPath()).isEqualTo(cwd.resolve("run/node.ipc"));
        assertThat(c.bindEndpoint()).isEqualTo("ipc://" + cwd.resolve("run/node.ipc"));
        assertThat(c.withClock(System::nanoTime).bindEndpoint()).as("resolved once").isEqualTo(c.bindEndpoint());
    }

    @Test
    void ipcEndpointsThatNameNoSocketFileAreRefusedWithTheirReason() {
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ipc://@kvledger"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("(Linux's abstract socket namespace) is not supported")
                .hasMessageContaining("ipc:///ABSOLUTE/PATH");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ipc://")).hasMessageContaining("needs a socket file's path");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ipc://*")).hasMessageContaining("needs a socket file's path");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ipc:///run/user/")).hasMessageContaining("must name a socket file");
        String longPath = "/" + "d".repeat(100) + "/node.ipc";
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("ipc://" + longPath))
                .hasMessageContaining("a Unix socket path holds at most 107 bytes");
        assertThatThrownBy(() -> EngineBridgeConfig.forEndpoint("inproc://x"))
                .hasMessageContaining("binds tcp://127.0.0.1:PORT, ipc:///PATH or unix:///PATH");
    }
}
