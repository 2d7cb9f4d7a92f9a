#pragma once
/// \file
/// Reading PNG and JPEG images (calibration data for quantization): 8-bit RGB pixels, row-major
/// with the three channels of a pixel adjacent.
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune {

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  ///< height * width * 3: R, G, B of each pixel, rows top down
};

/// Whether the extension names an image this module reads (.png, .jpg, .jpeg; any case).
bool is_image_path(const std::string& path);

/// The image as RGB (grey, palette and alpha images converted; 16-bit PNG rounded to 8 bits).
/// kInvalidArgument naming the file when it is not a readable PNG or JPEG.
Expected<RgbImage> read_image(const std::string& path);

/// Writes the image as an 8-bit RGB PNG; kInvalidArgument naming the file when it cannot.
Status write_png(const std::string& path, const RgbImage& image);

/// Bilinear resize (pixel centres aligned, as torchvision's and PIL's without antialiasing) to
/// height x width, each channel in [0, 1]: planar float, channel-major (C, H, W).
std::vector<float> resize_to_planar(const RgbImage& image, int64_t height, int64_t width);

}  // namespace tensortune
