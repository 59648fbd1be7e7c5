#pragma once
// A scanner feeding one sink, with the Python-facing plumbing every native
// reader shares: feed() without the GIL, the string table and the metadata.
#include <pybind11/pybind11.h>

#include <string_view>
#include <type_traits>
#include <utility>

#include "trace/scanner.hpp"

namespace itercast::bindings {

pybind11::str decode_utf8(std::string_view text);

// Sinks that read names take the string table; others are default-constructed.
template <class Sink>
Sink make_sink(const trace::StringTable& strings) {
    if constexpr (std::is_constructible_v<Sink, const trace::StringTable&>) {
        return Sink(strings);
    } else {
        return Sink();
    }
}

template <class Sink>
class ScanSession {
public:
    ScanSession() : sink_(make_sink<Sink>(strings_)), scanner_(sink_, strings_) {}

    void feed(pybind11::buffer data) {
        const pybind11::buffer_info info = data.request();
        if (info.ndim != 1 || info.itemsize != 1) throw pybind11::value_error("feed() takes a 1-d bytes-like object");
        const auto* bytes = static_cast<const char*>(info.ptr);
        pybind11::gil_scoped_release release;
        scanner_.feed(bytes, static_cast<size_t>(info.size));
    }

    void finish_scan() { scanner_.finish(); }

    // Interned strings with ids >= start, in id order.
    pybind11::list strings(size_t start) const {
        pybind11::list out;
        for (size_t id = start; id < strings_.size(); ++id)
            out.append(decode_utf8(strings_.at(static_cast<int32_t>(id))));
        return out;
    }

    pybind11::list metadata() const {
        pybind11::list out;
        for (const auto& [key, raw] : scanner_.metadata()) out.append(pybind11::make_tuple(decode_utf8(key), decode_utf8(raw)));
        return out;
    }

    const trace::Scanner& scanner() const { return scanner_; }
    size_t string_count() const { return strings_.size(); }

protected:
    trace::StringTable strings_;
    Sink sink_;
    trace::Scanner scanner_;
};

// The methods and properties every ScanSession-based class exposes.
template <class Session, class Class>
void define_session_methods(Class& cls) {
    namespace py = pybind11;
    cls.def("feed", &Session::feed, py::arg("data"), "Scan a chunk of any size (releases the GIL).")
        .def("strings", &Session::strings, py::arg("start") = 0, "Interned strings with ids >= start.")
        .def("metadata", &Session::metadata, "Top-level (key, raw JSON) pairs other than traceEvents.")
        .def_property_readonly("bytes_fed", [](const Session& s) { return s.scanner().bytes_fed(); })
        .def_property_readonly("events", [](const Session& s) { return s.scanner().events(); })
        .def_property_readonly("string_count", &Session::string_count)
        .def_property_readonly("complete", [](const Session& s) { return s.scanner().complete(); })
        .def_property_readonly("saw_trace_events", [](const Session& s) { return s.scanner().saw_trace_events(); });
}

}  // namespace itercast::bindings
