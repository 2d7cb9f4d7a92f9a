// PNG and JPEG reading against images written here (PNG bit for bit, JPEG at quality 100 within
// its rounding), the bilinear resize against values worked by hand, and bad files named.
#include "support/image_io.h"

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace tensortune {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tt_image_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

RgbImage pattern(int64_t height, int64_t width) {
  RgbImage im;
  im.height = height;
  im.width = width;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        im.pixels.push_back(static_cast<uint8_t>((y * 31 + x * 17 + c * 80) % 256));
  return im;
}

void write_jpeg(const std::string& path, const RgbImage& im) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_compress_struct info{};
  jpeg_error_mgr error{};
  info.err = jpeg_std_error(&error);
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, f);
  info.image_width = static_cast<JDIMENSION>(im.width);
  info.image_height = static_cast<JDIMENSION>(im.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  info.comp_info[0].h_samp_factor = info.comp_info[0].v_samp_factor = 1;  // no chroma subsampling
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&im.pixels[info.next_scanline * im.width * 3]);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(f);
}

TEST(ImageIo, PngRoundTripsExactly) {
  const RgbImage im = pattern(13, 21);
  const std::string path = temp("a.PNG");
  ASSERT_TRUE(write_png(path, im));
  ASSERT_TRUE(is_image_path(path));
  auto back = read_image(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->height, 13);
  EXPECT_EQ(back->width, 21);
  EXPECT_EQ(back->pixels, im.pixels);
}

TEST(ImageIo, JpegReadsWithinItsRounding) {
  RgbImage im;
  im.height = 16;
  im.width = 24;
  for (int64_t y = 0; y < 16; ++y)  // smooth, so that quality 100 keeps it within a few steps
    for (int64_t x = 0; x < 24; ++x)
      for (int c = 0; c < 3; ++c)
        im.pixels.push_back(static_cast<uint8_t>(40 + 4 * y + 3 * x + 20 * c));
  const std::string path = temp("b.jpeg");
  write_jpeg(path, im);
  auto back = read_image(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->pixels.size(), im.pixels.size());
  for (size_t i = 0; i < im.pixels.size(); ++i) EXPECT_NEAR(back->pixels[i], im.pixels[i], 3) << i;
}

// 2 x 2 to 4 x 4 with centres aligned: output x = 0..3 samples input x = -0.25, 0.25, 0.75,
// 1.25, clamped to [0, 1]: weights 0, 0.25, 0.75, 1 of the second column.
TEST(ImageIo, BilinearResizeAlignsPixelCentres) {
  RgbImage im;
  im.height = 2;
  im.width = 2;
  im.pixels = {0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255};  // black | white columns
  const std::vector<float> out = resize_to_planar(im, 4, 4);
  ASSERT_EQ(out.size(), 48u);
  const float want[4] = {0, 0.25f, 0.75f, 1};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(out[(c * 4 + y) * 4 + x], want[x]);
}

TEST(ImageIo, UnreadableFilesAreNamed) {
  const std::string png = temp("bad.png"), jpg = temp("bad.jpg");
  std::ofstream(png) << "not a png";
  std::ofstream(jpg) << "not a jpeg";
  auto a = read_image(png);
  auto b = read_image(jpg);
  auto c = read_image(temp("none.bmp"));
  std::filesystem::remove(png);
  std::filesystem::remove(jpg);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("bad.png: not a readable PNG"), std::string::npos)
      << a.error().message;
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("bad.jpg: not a readable JPEG"), std::string::npos)
      << b.error().message;
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("not a .png, .jpg or .jpeg file"), std::string::npos);
}

}  // namespace
}  // namespace tensortune
