package io.kvledger.cli;

/**
 * A {@code HOST:PORT} option value ({@code --http}, {@code --metrics}) as the commands that serve
 * something take it: the port after the last colon, 0 to 65535 (0: any free port), and an IPv6
 * host given in brackets ({@code [::1]:9000}) without them.
 */
record HostPort(String host, int port) {

    /**
     * Parses {@code value}, the value of {@code option}.
     *
     * @throws IllegalArgumentException naming the option and the value when there is no host part
     *     or no port from 0 to 65535
     */
    static HostPort parse(String option, String value) {
        int colon = value.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException(option + " takes HOST:PORT, got " + value);
        }
        String portText = value.substring(colon + 1);
        int port;
        try {
            port = Integer.parseInt(portText.strip());
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 0 || port > 65_535) {
            throw new IllegalArgumentException(option + " needs a port from 0 to 65535, got " + portText);
        }
        String host = value.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new HostPort(host, port);
    }

    /** The host as a URL names it: an IPv6 address in brackets. */
    String urlHost() {
        return host.contains(":") ? "[" + host + "]" : host;
    }
}
