// PNG encoding and decoding with libpng's simplified API (png_image), in memory (see plot_raster.h).
#include "core/export/plot_raster.h"

#include <png.h>

#include <stdexcept>

namespace speculum::exporting {

std::vector<uint8_t> encode_png(const Image& img) {
    if (img.width <= 0 || img.height <= 0 || img.rgba.size() != size_t(img.width) * size_t(img.height) * 4)
        throw std::invalid_argument("encode_png: the image has no pixels or the wrong buffer size");
    png_image png{};
    png.version           = PNG_IMAGE_VERSION;
    png.width             = static_cast<png_uint_32>(img.width);
    png.height            = static_cast<png_uint_32>(img.height);
    png.format            = PNG_FORMAT_RGBA;
    png_alloc_size_t size = 0;
    // First call sizes the buffer, second writes it.
    if (!png_image_write_to_memory(&png, nullptr, &size, 0, img.rgba.data(), 0, nullptr))
        throw std::runtime_error(std::string("libpng: ") + png.message);
    std::vector<uint8_t> out(size);
    if (!png_image_write_to_memory(&png, out.data(), &size, 0, img.rgba.data(), 0, nullptr))
        throw std::runtime_error(std::string("libpng: ") + png.message);
    out.resize(size);
    return out;
}

Image decode_png(const std::vector<uint8_t>& bytes) {
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
        throw std::runtime_error(std::string("not a PNG libpng can read: ") + png.message);
    if (png.width == 0 || png.height == 0 || png.width > 16384 || png.height > 16384) {
        png_image_free(&png);
        throw std::runtime_error("PNG size out of range (1..16384 pixels each way)");
    }
    png.format = PNG_FORMAT_RGBA;
    Image img;
    img.width  = static_cast<int>(png.width);
    img.height = static_cast<int>(png.height);
    img.rgba.resize(PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, img.rgba.data(), 0, nullptr))
        throw std::runtime_error(std::string("libpng: ") + png.message);
    return img;
}

}  // namespace speculum::exporting
