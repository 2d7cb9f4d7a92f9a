// Implements image_io.h with libpng's simplified API and libjpeg(-turbo).
#include "support/image_io.h"

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <memory>

namespace tensortune {
namespace {

std::string lower_extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

Expected<RgbImage> read_png(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    return invalid_argument(path + ": not a readable PNG (" + image.message + ")");
  image.format = PNG_FORMAT_RGB;
  RgbImage out;
  out.height = image.height;
  out.width = image.width;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    return invalid_argument(path + ": not a readable PNG (" + why + ")");
  }
  return out;
}

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

void on_jpeg_error(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

Expected<RgbImage> read_jpeg(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return invalid_argument(path + ": cannot be opened");
  jpeg_decompress_struct info{};
  JpegError error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  RgbImage out;
  // libjpeg reports errors by longjmp: nothing with a destructor is created after this point.
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    return invalid_argument(path + ": not a readable JPEG (" + error.message + ")");
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file.get());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  out.height = info.output_height;
  out.width = info.output_width;
  out.pixels.resize(static_cast<size_t>(out.height * out.width * 3));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = &out.pixels[static_cast<size_t>(info.output_scanline) * out.width * 3];
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return out;
}

}  // namespace

bool is_image_path(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

Expected<RgbImage> read_image(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".png") return read_png(path);
  if (ext == ".jpg" || ext == ".jpeg") return read_jpeg(path);
  return invalid_argument(path + ": not a .png, .jpg or .jpeg file");
}

Status write_png(const std::string& path, const RgbImage& image) {
  if (image.pixels.size() != static_cast<size_t>(image.height * image.width * 3))
    return invalid_argument(path + ": the image has " + std::to_string(image.pixels.size()) +
                            " bytes for " + std::to_string(image.height) + " x " +
                            std::to_string(image.width) + " RGB pixels");
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr))
    return invalid_argument(path + ": cannot write the PNG (" + png.message + ")");
  return Status{};
}

std::vector<float> resize_to_planar(const RgbImage& image, int64_t height, int64_t width) {
  std::vector<float> out(static_cast<size_t>(3 * height * width));
  const double sy = double(image.height) / double(height), sx = double(image.width) / double(width);
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::clamp((double(y) + 0.5) * sy - 0.5, 0.0, double(image.height - 1));
    const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, image.height - 1);
    const double wy = fy - double(y0);
    for (int64_t x = 0; x < width; ++x) {
      const double fx = std::clamp((double(x) + 0.5) * sx - 0.5, 0.0, double(image.width - 1));
      const int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, image.width - 1);
      const double wx = fx - double(x0);
      for (int64_t c = 0; c < 3; ++c) {
        auto at = [&](int64_t yy, int64_t xx) {
          return double(image.pixels[static_cast<size_t>((yy * image.width + xx) * 3 + c)]);
        };
        const double v = (at(y0, x0) * (1 - wx) + at(y0, x1) * wx) * (1 - wy) +
                         (at(y1, x0) * (1 - wx) + at(y1, x1) * wx) * wy;
        out[static_cast<size_t>((c * height + y) * width + x)] = static_cast<float>(v / 255.0);
      }
    }
  }
  return out;
}

}  // namespace tensortune
