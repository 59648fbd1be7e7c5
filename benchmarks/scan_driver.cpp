// Standalone scanner throughput driver, for profiling without Python
// (perf, callgrind). Built by benchmarks/build-scan-driver, not by CMake.
//
//   scan_driver [--sink null|columnar] [--repeat N] TRACE.json[.gz]...
//
// Each trace is inflated into memory first; only scanning is timed.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "trace/columnar_sink.hpp"
#include "trace/scanner.hpp"

using namespace itercast::trace;

namespace {

constexpr size_t kChunkBytes = size_t{4} << 20;

class CountingSink : public EventSink {
public:
    void on_event(const Event& event) override { checksum_ += static_cast<uint64_t>(event.ts_ns); }
    uint64_t checksum_ = 0;
};

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::string data(static_cast<size_t>(in.tellg()), '\0');
    in.seekg(0);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    return data;
}

std::string inflate_gzip(const std::string& compressed) {
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 32) != Z_OK) throw std::runtime_error("inflateInit2 failed");
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    zs.avail_in = static_cast<uInt>(compressed.size());
    std::string out;
    char buffer[1 << 16];
    int status = Z_OK;
    while (status != Z_STREAM_END) {
        zs.next_out = reinterpret_cast<Bytef*>(buffer);
        zs.avail_out = sizeof buffer;
        status = inflate(&zs, Z_NO_FLUSH);
        if (status != Z_OK && status != Z_STREAM_END) throw std::runtime_error("corrupt gzip");
        out.append(buffer, sizeof buffer - zs.avail_out);
    }
    inflateEnd(&zs);
    return out;
}

double seconds(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class Sink>
uint64_t scan(const std::string& data, size_t reserve_events) {
    Sink sink;
    if constexpr (std::is_same_v<Sink, ColumnarSink>) sink.reserve(reserve_events);
    StringTable strings;
    Scanner scanner(sink, strings);
    for (size_t at = 0; at < data.size(); at += kChunkBytes)
        scanner.feed(data.data() + at, std::min(kChunkBytes, data.size() - at));
    scanner.finish();
    return scanner.events();
}

}  // namespace

int main(int argc, char** argv) {
    std::string sink = "columnar";
    int repeat = 3;
    size_t bytes_per_event = size_t{1} << 62;  // --reserve-per N: reserve one event per N bytes
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--sink" && i + 1 < argc) sink = argv[++i];
        else if (arg == "--reserve-per" && i + 1 < argc) bytes_per_event = std::stoul(argv[++i]);
        else if (arg == "--repeat" && i + 1 < argc) repeat = std::stoi(argv[++i]);
        else paths.push_back(arg);
    }
    for (const auto& path : paths) {
        std::string data = read_file(path);
        if (data.size() >= 2 && data[0] == '\x1f' && data[1] == '\x8b') data = inflate_gzip(data);
        double best_cpu = 1e30, best_wall = 1e30;
        uint64_t events = 0;
        for (int r = 0; r < repeat; ++r) {
            const double cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC);
            events = sink == "null" ? scan<CountingSink>(data, 0) : scan<ColumnarSink>(data, data.size() / bytes_per_event);
            best_cpu = std::min(best_cpu, seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
            best_wall = std::min(best_wall, seconds(CLOCK_MONOTONIC) - wall0);
        }
        const double gb = static_cast<double>(data.size()) / 1e9;
        std::printf("%-8s %8.1f MB %9llu events  cpu %.3f s %5.2f GB/s  wall %.3f s %5.2f GB/s  %s\n",
                    sink.c_str(), gb * 1e3, static_cast<unsigned long long>(events), best_cpu, gb / best_cpu,
                    best_wall, gb / best_wall, path.c_str());
    }
}
