#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings/numpy_util.hpp"
#include "bindings/register.hpp"
#include "bindings/scan_session.hpp"
#include "trace/columnar_sink.hpp"
#include "trace/scanner.hpp"

namespace py = pybind11;

namespace itercast::bindings {

namespace {

// Below the bytes per event of Kineto traces (about 190 to 460), so reserving
// size_hint / kMinBytesPerEvent events usually avoids regrowing the columns;
// the unused tail of the reservation is never touched, so costs no RSS.
constexpr int64_t kMinBytesPerEvent = 160;

// Scans a trace fed in chunks and accumulates events as columns.
class PyScanner : public ScanSession<trace::ColumnarSink> {
public:
    explicit PyScanner(int64_t size_hint) {
        if (size_hint > 0) sink_.reserve(static_cast<size_t>(size_hint / kMinBytesPerEvent));
    }

    // Moves the events gathered so far out as numpy columns.
    py::dict take_events() {
        py::dict columns;
        sink_.trim();
#define ITERCAST_EXPORT_COLUMN(type, field) columns[#field] = to_numpy(std::move(sink_.field));
        ITERCAST_EVENT_COLUMNS(ITERCAST_EXPORT_COLUMN)
#undef ITERCAST_EXPORT_COLUMN
        sink_ = trace::ColumnarSink();
        return columns;
    }

    size_t pending() const { return sink_.size(); }
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

    py::class_<PyScanner> cls(m, "Scanner", "Push-based, resumable Kineto trace scanner");
    cls.def(py::init<int64_t>(), py::arg("size_hint") = 0,
            "size_hint: expected uncompressed bytes, to size the event columns up front.")
        .def("finish", &PyScanner::finish_scan, "Declare the end of the stream; raises ParseError if truncated.")
        .def("take_events", &PyScanner::take_events, "Move the events scanned so far out as numpy columns.")
        .def_property_readonly("pending", &PyScanner::pending);
    define_session_methods<PyScanner>(cls);
}

}  // namespace itercast::bindings
