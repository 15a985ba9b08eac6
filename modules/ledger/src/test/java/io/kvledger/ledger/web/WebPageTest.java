package io.kvledger.ledger.web;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The self-contained page of {@code inspect --html}: journal text cannot break out of its script element. */
class WebPageTest {

    @Test
    void embeddedDataCannotEndItsScriptElement() {
        String hostile = "</script><script>alert(1)</script><!-- \u2028";
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("query", hostile);
        data.put("lines", List.of(Map.of("text", hostile)));
        String html = WebPage.standalone(data);

        // Exactly the page's own two script elements end: the data's and the program's.
        assertThat(html.split("</script>", -1)).hasSize(3);
        assertThat(html).doesNotContain("<script>alert").doesNotContain("<!-- ");
        String open = "<script type=\"application/json\" id=\"kvledger-data\">";
        int from = html.indexOf(open) + open.length();
        String json = html.substring(from, html.indexOf("</script>", from));
        assertThat(Json.parse(json)).as("the embedded JSON reads back as the data").isEqualTo(Json.parse(Json.write(data)));
        assertThat(html).doesNotContain("src=\"app.js\"").doesNotContain("href=\"app.css\"");
    }
}
