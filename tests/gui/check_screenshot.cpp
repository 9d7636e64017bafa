// Checks a screenshot of the app: not blank, and showing a Dear ImGui window (dark body, blue active title bar,
// light text) over the app's clear colour. Prints what it counted so a failure says why.
#include <QColor>
#include <QImage>

#include <cstdio>
#include <cstdlib>
#include <set>

static bool near(QRgb p, int r, int g, int b, int tol) {
    return std::abs(qRed(p) - r) <= tol && std::abs(qGreen(p) - g) <= tol && std::abs(qBlue(p) - b) <= tol;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: check_screenshot IMAGE.png\n");
        return 2;
    }
    QImage img(argv[1]);
    if (img.isNull()) {
        std::fprintf(stderr, "check_screenshot: cannot read %s\n", argv[1]);
        return 1;
    }
    img        = img.convertToFormat(QImage::Format_RGB32);
    long clear = 0, title = 0, body = 0, text = 0;
    std::set<QRgb> colours;
    for (int y = 0; y < img.height(); ++y) {
        const QRgb* row = reinterpret_cast<const QRgb*>(img.constScanLine(y));
        for (int x = 0; x < img.width(); ++x) {
            QRgb p = row[x];
            if (colours.size() < 4096) colours.insert(p);
            if (near(p, 33, 36, 43, 3)) ++clear;                             // glClearColor(0.13, 0.14, 0.17)
            if (near(p, 41, 74, 122, 8)) ++title;                            // ImGuiCol_TitleBgActive (dark style)
            if (near(p, 15, 15, 15, 6)) ++body;                              // ImGuiCol_WindowBg (0.06, 0.94 alpha)
            if (qRed(p) > 200 && qGreen(p) > 200 && qBlue(p) > 200) ++text;  // ImGuiCol_Text is white
        }
    }
    const long total = long(img.width()) * img.height();
    std::printf("check_screenshot: %dx%d, %zu colours, clear %ld, title bar %ld, window body %ld, text %ld\n",
                img.width(), img.height(), colours.size(), clear, title, body, text);
    bool ok   = true;
    auto need = [&](bool cond, const char* what) {
        if (!cond) {
            std::fprintf(stderr, "check_screenshot: FAIL: %s\n", what);
            ok = false;
        }
    };
    need(img.width() >= 320 && img.height() >= 200, "image smaller than 320x200");
    need(colours.size() >= 16, "image is (nearly) blank: fewer than 16 distinct colours");
    need(clear > total / 20, "the app's clear colour covers less than 5% of the image (GL did not render)");
    need(title > 2000, "no ImGui title bar (TitleBgActive) visible");
    need(body > 20000, "no ImGui window body (WindowBg) visible");
    need(text > 200, "no text visible");
    return ok ? 0 : 1;
}
