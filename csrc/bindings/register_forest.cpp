// Python bindings of the LightGBM tree-ensemble evaluator (csrc/predict).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>

#include "bindings/numpy_util.hpp"
#include "bindings/register.hpp"
#include "predict/forest.hpp"

namespace py = pybind11;

namespace itercast::bindings {
namespace {

using predict::Forest;
using Rows = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Select = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

Forest parse_forest(const py::object& text) {
    std::string owned;
    if (py::isinstance<py::bytes>(text)) {
        owned = text.cast<std::string>();
    } else if (py::isinstance<py::str>(text)) {
        owned = text.cast<std::string>();
    } else {
        throw py::type_error("Forest(model_text): expected str or bytes, got " +
                             std::string(py::str(py::type::of(text).attr("__name__"))));
    }
    py::gil_scoped_release release;
    return Forest::parse(owned);
}

void check_matrix(const Forest& forest, const Rows& x) {
    if (x.ndim() != 2) throw py::value_error("x must be a 2-D array (rows, features)");
    if (x.shape(1) != forest.num_features()) {
        throw py::value_error("x has " + std::to_string(x.shape(1)) + " columns; the model reads " +
                              std::to_string(forest.num_features()) + " features");
    }
}

// LightGBM's predict(): raw scores, averaged over trees for average_output models (random forests).
void to_output(const Forest& forest, std::vector<double>& out) {
    if (!forest.identity_output()) {
        throw py::value_error("raw_score=False: objective '" + forest.objective() +
                              "' converts its raw scores; only identity-output objectives (regression, ...) "
                              "are converted natively, use raw_score=True");
    }
    if (forest.average_output() && forest.num_trees() > 0) {
        for (double& v : out) v /= static_cast<double>(forest.num_trees());
    }
}

py::array_t<double> predict(const Forest& forest, const Rows& x, const py::object& rows, int threads,
                            bool raw_score) {
    check_matrix(forest, x);
    if (!raw_score && !forest.identity_output()) {
        std::vector<double> none;
        to_output(forest, none);
    }
    const auto n_rows = static_cast<std::size_t>(x.shape(0));
    const float* data = x.data();
    if (rows.is_none()) {
        std::vector<double> out(n_rows);
        {
            py::gil_scoped_release release;
            forest.predict(data, n_rows, static_cast<std::size_t>(forest.num_features()), out.data(), nullptr,
                           threads);
        }
        if (!raw_score) to_output(forest, out);
        return to_numpy(std::move(out));
    }
    const Select select = rows.cast<Select>();
    if (select.ndim() != 1) throw py::value_error("rows must be a 1-D array of row indices");
    const auto n = static_cast<std::size_t>(select.shape(0));
    const std::int64_t* index = select.data();
    for (std::size_t i = 0; i < n; ++i) {
        if (index[i] < 0 || static_cast<std::size_t>(index[i]) >= n_rows) {
            throw py::index_error("rows[" + std::to_string(i) + "] = " + std::to_string(index[i]) +
                                  " is outside 0.." + std::to_string(n_rows) + ")");
        }
    }
    std::vector<double> out(n);
    {
        py::gil_scoped_release release;
        forest.predict(data, n, static_cast<std::size_t>(forest.num_features()), out.data(), index, threads);
    }
    if (!raw_score) to_output(forest, out);
    return to_numpy(std::move(out));
}

}  // namespace

void register_forest(py::module_& m) {
    py::register_exception<predict::ForestError>(m, "ForestError", PyExc_ValueError);

    py::class_<Forest>(m, "Forest", "A LightGBM regression model read from its text format, scored natively")
        .def(py::init(&parse_forest), py::arg("model_text"))
        .def("predict", &predict, py::arg("x"), py::arg("rows") = py::none(), py::arg("threads") = 1,
             py::arg("raw_score") = true,
             "booster.predict(x, raw_score=raw_score) of float32 rows, or of x[rows]; raw_score=False "
             "only for identity-output objectives (it averages average_output models).")
        .def(
            "set_linear_bounds",
            [](Forest& forest, std::vector<float> low, std::vector<float> high) {
                try {
                    forest.set_linear_bounds(std::move(low), std::move(high));
                } catch (const std::invalid_argument& error) {
                    throw py::value_error(error.what());
                }
            },
            py::arg("low"), py::arg("high"),
            "Linear leaves read feature f within [low[f], high[f]] (one float bound each; none until set).")
        .def_property_readonly(
            "linear_bounds",
            [](const Forest& forest) -> py::object {
                if (!forest.linear_bounded()) return py::none();
                return py::make_tuple(forest.linear_low(), forest.linear_high());
            },
            "(low, high) as set by set_linear_bounds, or None")
        .def_property_readonly("num_features", &Forest::num_features)
        .def_property_readonly("num_trees", &Forest::num_trees)
        .def_property_readonly("num_nodes", &Forest::num_nodes)
        .def_property_readonly("average_output", &Forest::average_output)
        .def_property_readonly("objective", &Forest::objective)
        .def_property_readonly("has_categorical", &Forest::has_categorical)
        .def_property_readonly("has_linear", &Forest::has_linear);

    m.def(
        "forest_kernel",
        [](const py::object& kernel) {
            if (!kernel.is_none()) {
                const auto name = kernel.cast<std::string>();
                if (name != "auto" && name != "portable") {
                    throw py::value_error("forest_kernel: 'auto' or 'portable', got '" + name + "'");
                }
                predict::set_bit_kernel(name == "auto" ? predict::BitKernel::Auto : predict::BitKernel::Portable);
            }
            return std::string(predict::bit_kernel_name());
        },
        py::arg("kernel") = py::none(),
        "The bit-set kernel scoring forests of trees with <= 64 leaves: 'avx512' or 'portable'. "
        "'portable' forces the portable kernel, 'auto' picks AVX-512 where the SIMD level is AVX-512 "
        "(the CPU's best, capped by $ITERCAST_SIMD).");
}

}  // namespace itercast::bindings
