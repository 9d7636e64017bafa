// Plot -> SVG (see plot_svg.h).
#include "core/export/plot_svg.h"

#include <cstdio>

namespace speculum::exporting {

namespace {

std::string f(float v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", double(v));
    std::string s = b;
    while (s.back() == '0') s.pop_back();  // "12.50" -> "12.5", "3.00" -> "3."
    if (s.back() == '.') s.pop_back();
    return s;
}

std::string color(Rgba c) {
    char b[16];
    std::snprintf(b, sizeof b, "#%02x%02x%02x", c.r, c.g, c.b);
    return b;
}

std::string opacity(Rgba c, const char* attr) {
    if (c.a == 255) return "";
    char b[48];
    std::snprintf(b, sizeof b, " %s=\"%.3f\"", attr, c.a / 255.0);
    return b;
}

}  // namespace

std::string xml_escape(const std::string& s) {
    std::string o;
    o.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            case '\'':
                o += "&apos;";
                break;
            default:
                // Control characters are not allowed in XML 1.0 (tab, LF, CR excepted).
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') o += c;
        }
    }
    return o;
}

std::string to_svg(const Plot& p) {
    std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(p.width) +
         "\" height=\"" + std::to_string(p.height) + "\" viewBox=\"0 0 " + std::to_string(p.width) + " " +
         std::to_string(p.height) + "\">\n";
    s += "<title>" + xml_escape(p.title) + "</title>\n";
    s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(p.width) + "\" height=\"" + std::to_string(p.height) +
         "\" fill=\"" + color(p.background) + "\"" + opacity(p.background, "fill-opacity") + "/>\n";
    for (const PlotRect& r : p.rects) {
        s += "<rect x=\"" + f(r.x) + "\" y=\"" + f(r.y) + "\" width=\"" + f(r.w) + "\" height=\"" + f(r.h) +
             "\" fill=\"" + color(r.fill) + "\"" + opacity(r.fill, "fill-opacity");
        s += r.tip.empty() ? "/>\n" : "><title>" + xml_escape(r.tip) + "</title></rect>\n";
    }
    for (const PlotLine& l : p.lines)
        s += "<line x1=\"" + f(l.x0) + "\" y1=\"" + f(l.y0) + "\" x2=\"" + f(l.x1) + "\" y2=\"" + f(l.y1) +
             "\" stroke=\"" + color(l.color) + "\"" + opacity(l.color, "stroke-opacity") + " stroke-width=\"" +
             f(l.width) + "\"/>\n";
    for (const PlotText& t : p.texts) {
        const char* anchor = t.anchor == TextAnchor::start    ? "start"
                             : t.anchor == TextAnchor::middle ? "middle"
                                                              : "end";
        s += "<text x=\"" + f(t.x) + "\" y=\"" + f(t.y) + "\" font-family=\"monospace\" font-size=\"" + f(t.size) +
             "\" text-anchor=\"" + anchor + "\" fill=\"" + color(t.color) + "\"" + opacity(t.color, "fill-opacity") +
             ">" + xml_escape(t.text) + "</text>\n";
    }
    s += "</svg>\n";
    return s;
}

}  // namespace speculum::exporting
