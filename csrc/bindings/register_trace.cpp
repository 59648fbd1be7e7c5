#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/numpy_util.hpp"
#include "bindings/register.hpp"
#include "trace/columnar_sink.hpp"
#include "trace/scanner.hpp"

namespace py = pybind11;

namespace itercast::bindings {

namespace {

using trace::ColumnarSink;
using trace::Scanner;
using trace::StringTable;

py::str decode(std::string_view text) {
    PyObject* decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "surrogatepass");
    if (!decoded) {
        PyErr_Clear();
        decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    }
    return py::reinterpret_steal<py::str>(decoded);
}

// Below the bytes per event of Kineto traces (about 190 to 460), so reserving
// size_hint / kMinBytesPerEvent events usually avoids regrowing the columns;
// the unused tail of the reservation is never touched, so costs no RSS.
constexpr int64_t kMinBytesPerEvent = 160;

// Scans a trace fed in chunks and accumulates events as columns.
class PyScanner {
public:
    explicit PyScanner(int64_t size_hint) : scanner_(sink_, strings_) {
        if (size_hint > 0) sink_.reserve(static_cast<size_t>(size_hint / kMinBytesPerEvent));
    }

    void feed(py::buffer data) {
        const py::buffer_info info = data.request();
        if (info.ndim != 1 || info.itemsize != 1) throw py::value_error("feed() takes a 1-d bytes-like object");
        const auto* bytes = static_cast<const char*>(info.ptr);
        py::gil_scoped_release release;
        scanner_.feed(bytes, static_cast<size_t>(info.size));
    }

    void finish() { scanner_.finish(); }

    // Moves the events gathered so far out as numpy columns.
    py::dict take_events() {
        py::dict columns;
#define ITERCAST_EXPORT_COLUMN(type, field) columns[#field] = to_numpy(std::move(sink_.field));
        ITERCAST_EVENT_COLUMNS(ITERCAST_EXPORT_COLUMN)
#undef ITERCAST_EXPORT_COLUMN
        sink_ = ColumnarSink();
        return columns;
    }

    // Interned strings with ids >= start, in id order.
    py::list strings(size_t start) const {
        py::list out;
        for (size_t id = start; id < strings_.size(); ++id) out.append(decode(strings_.at(static_cast<int32_t>(id))));
        return out;
    }

    py::list metadata() const {
        py::list out;
        for (const auto& [key, raw] : scanner_.metadata()) out.append(py::make_tuple(decode(key), decode(raw)));
        return out;
    }

    const Scanner& scanner() const { return scanner_; }
    size_t pending() const { return sink_.size(); }
    size_t string_count() const { return strings_.size(); }

private:
    ColumnarSink sink_;
    StringTable strings_;
    Scanner scanner_;
};

}  // namespace

void register_trace(py::module_& m) {
    static py::exception<trace::ParseError> parse_error(m, "ParseError", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const trace::ParseError& e) {
            py::object args = py::make_tuple(e.what(), e.offset, py::bytes(e.excerpt), e.truncated);
            PyErr_SetObject(parse_error.ptr(), args.ptr());
        }
    });

    m.attr("MISSING") = py::int_(trace::kMissing);

    py::class_<PyScanner>(m, "Scanner", "Push-based, resumable Kineto trace scanner")
        .def(py::init<int64_t>(), py::arg("size_hint") = 0,
             "size_hint: expected uncompressed bytes, to size the event columns up front.")
        .def("feed", &PyScanner::feed, py::arg("data"), "Scan a chunk of any size (releases the GIL).")
        .def("finish", &PyScanner::finish, "Declare the end of the stream; raises ParseError if truncated.")
        .def("take_events", &PyScanner::take_events, "Move the events scanned so far out as numpy columns.")
        .def("strings", &PyScanner::strings, py::arg("start") = 0, "Interned strings with ids >= start.")
        .def("metadata", &PyScanner::metadata, "Top-level (key, raw JSON) pairs other than traceEvents.")
        .def_property_readonly("bytes_fed", [](const PyScanner& s) { return s.scanner().bytes_fed(); })
        .def_property_readonly("events", [](const PyScanner& s) { return s.scanner().events(); })
        .def_property_readonly("pending", &PyScanner::pending)
        .def_property_readonly("string_count", &PyScanner::string_count)
        .def_property_readonly("complete", [](const PyScanner& s) { return s.scanner().complete(); })
        .def_property_readonly("saw_trace_events",
                               [](const PyScanner& s) { return s.scanner().saw_trace_events(); });
}

}  // namespace itercast::bindings
