// A stand-in for libFuzzer's driver, so that every fuzz target also runs as
// an ordinary regression test with any compiler: it feeds the target every
// file of the seed corpus (and any crash reproducers checked in next to it),
// then a fixed number of seeded pseudo-random inputs, half of them mutations
// of corpus files. A failing target aborts, which fails the test.
//
// Usage: <target> [--runs=N] [--seed=S] [--max_len=L] <file or dir>...
// Directories are read non-recursively, in name order, so that a run is
// reproducible from its seed.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::vector<uint8_t>;

// Runs one input from an exactly sized heap buffer, so that a sanitizer
// build reports any read past its end.
void RunOne(const Input& input) {
  uint8_t* copy = new uint8_t[input.size() + (input.empty() ? 1 : 0)];
  std::copy(input.begin(), input.end(), copy);
  LLVMFuzzerTestOneInput(copy, input.size());
  delete[] copy;
}

bool ReadFile(const std::filesystem::path& path, Input* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return true;
}

bool ParseFlag(const std::string& arg, const char* name, uint64_t* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  *value = std::strtoull(arg.c_str() + prefix.size(), nullptr, 10);
  return true;
}

Input Mutate(Input input, std::mt19937_64& rng, size_t max_len) {
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < edits; ++i) {
    switch (rng() % 6) {
      case 0:  // overwrite a byte
        if (!input.empty()) input[rng() % input.size()] = rng() & 0xff;
        break;
      case 1:  // flip a bit
        if (!input.empty()) {
          input[rng() % input.size()] ^=
              static_cast<uint8_t>(1u << (rng() % 8));
        }
        break;
      case 2:  // truncate
        input.resize(input.empty() ? 0 : rng() % (input.size() + 1));
        break;
      case 3:  // insert a byte
        if (input.size() < max_len) {
          input.insert(input.begin() + static_cast<std::ptrdiff_t>(
                                           rng() % (input.size() + 1)),
                       static_cast<uint8_t>(rng()));
        }
        break;
      case 4:  // nudge a byte: length fields one or a few off
        if (!input.empty()) {
          const int delta = static_cast<int>(rng() % 17) - 8;
          uint8_t& b = input[rng() % input.size()];
          b = static_cast<uint8_t>(b + delta);
        }
        break;
      default:  // set a 16-bit field to an edge value
        if (input.size() >= 2) {
          static constexpr uint16_t kEdges[] = {0,  1,  7,      8,
                                                20, 40, 0x7fff, 0xffff};
          const size_t at = rng() % (input.size() - 1);
          const uint16_t v = kEdges[rng() % std::size(kEdges)];
          input[at] = static_cast<uint8_t>(v >> 8);
          input[at + 1] = static_cast<uint8_t>(v);
        }
        break;
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 10000;
  uint64_t seed = 1;
  uint64_t max_len = 512;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (ParseFlag(arg, "runs", &runs) || ParseFlag(arg, "seed", &seed) ||
        ParseFlag(arg, "max_len", &max_len)) {
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) in_dir.push_back(entry.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      files.emplace_back(arg);
    } else {
      std::fprintf(stderr, "no such file or directory: %s\n", arg.c_str());
      return 2;
    }
  }

  std::vector<Input> corpus;
  for (const auto& path : files) {
    Input input;
    if (!ReadFile(path, &input)) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    RunOne(input);
    corpus.push_back(std::move(input));
  }
  std::printf("%zu corpus inputs passed\n", corpus.size());

  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < runs; ++i) {
    if (!corpus.empty() && (i & 1) == 0) {
      RunOne(Mutate(corpus[rng() % corpus.size()], rng, max_len));
    } else {
      Input input(rng() % (max_len + 1));
      for (uint8_t& b : input) b = static_cast<uint8_t>(rng());
      RunOne(input);
    }
  }
  std::printf("%llu random inputs passed (seed %llu)\n",
              static_cast<unsigned long long>(runs),
              static_cast<unsigned long long>(seed));
  return 0;
}
