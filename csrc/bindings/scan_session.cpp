#include "bindings/scan_session.hpp"

namespace itercast::bindings {

// Names decode as json.loads would: lone surrogates from \u escapes survive.
pybind11::str decode_utf8(std::string_view text) {
    PyObject* decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "surrogatepass");
    if (!decoded) {
        PyErr_Clear();
        decoded = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    }
    return pybind11::reinterpret_steal<pybind11::str>(decoded);
}

}  // namespace itercast::bindings
