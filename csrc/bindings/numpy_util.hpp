#pragma once
// Hands a std::vector to numpy without copying: the array owns the vector.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

namespace itercast::bindings {

template <class T, class Allocator>
pybind11::array_t<T> to_numpy(std::vector<T, Allocator>&& values) {
    using Vector = std::vector<T, Allocator>;
    auto* owned = new Vector(std::move(values));
    pybind11::capsule owner(owned, [](void* p) { delete static_cast<Vector*>(p); });
    return pybind11::array_t<T>(static_cast<pybind11::ssize_t>(owned->size()), owned->data(), owner);
}

}  // namespace itercast::bindings
