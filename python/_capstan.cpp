// capstan._capstan: a model library (capstan/model_library.h, built by
// `capstan library`) loaded into Python. The package's Python half
// (capstan/__init__.py) runs capstan to build and check; this half only
// opens the library and moves arrays across its C interface, releasing the
// GIL while a simulation runs so that threads run models in parallel.
//
//   lib = _capstan.Library("/cache/.../libmodel.so")
//   m = lib.instance()            # one capstan_model: its own parameters
//   m.simulate(["--t-end=1"], None) -> (status, message, names, values)
#include <dlfcn.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "capstan/model_library.h"

namespace py = pybind11;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// The library's functions, looked up once.
class Library {
 public:
  explicit Library(const std::string& path) : path_(path) {
    // RTLD_LOCAL: each model's library keeps its own copy of the engine and
    // the model, even where two were built from the same model.
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error("cannot load the model library `" + path + "`: " + ::dlerror());
    lookup(version, "capstan_library_version");
    if (version() != CAPSTAN_LIBRARY_VERSION)
      throw std::runtime_error("the model library `" + path + "` has interface version " +
                               std::to_string(version()) + ", this module " + std::to_string(CAPSTAN_LIBRARY_VERSION) +
                               ": build it again with this capstan");
    lookup(make, "capstan_model_new");
    lookup(release, "capstan_model_free");
    lookup(error, "capstan_model_error");
    lookup(shape, "capstan_model_shape");
    lookup(setParameter, "capstan_model_set_parameter");
    lookup(initialState, "capstan_model_initial_state");
    lookup(forwardDynamics, "capstan_model_forward_dynamics");
    lookup(derivatives, "capstan_model_derivatives");
    lookup(evaluate, "capstan_model_evaluate");
    lookup(simulate, "capstan_model_simulate");
    lookup(table, "capstan_model_table");
    lookup(columnName, "capstan_model_column_name");
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  // Never dlclose'd: an instance's code may still be on a thread's stack
  // when Python drops the last reference, and a library is small.
  ~Library() = default;

  const std::string& path() const { return path_; }

  decltype(&capstan_library_version) version = nullptr;
  decltype(&capstan_model_new) make = nullptr;
  decltype(&capstan_model_free) release = nullptr;
  decltype(&capstan_model_error) error = nullptr;
  decltype(&capstan_model_shape) shape = nullptr;
  decltype(&capstan_model_set_parameter) setParameter = nullptr;
  decltype(&capstan_model_initial_state) initialState = nullptr;
  decltype(&capstan_model_forward_dynamics) forwardDynamics = nullptr;
  decltype(&capstan_model_derivatives) derivatives = nullptr;
  decltype(&capstan_model_evaluate) evaluate = nullptr;
  decltype(&capstan_model_simulate) simulate = nullptr;
  decltype(&capstan_model_table) table = nullptr;
  decltype(&capstan_model_column_name) columnName = nullptr;

 private:
  template <class F>
  void lookup(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(handle_, name));
    if (!f) throw std::runtime_error("the model library `" + path_ + "` has no `" + name + "`");
  }
  std::string path_;
  void* handle_ = nullptr;
};

// One capstan_model. Its calls hold a lock: two threads may share an
// Instance (they then take turns); two Instances run at once.
class Instance {
 public:
  explicit Instance(std::shared_ptr<Library> lib) : lib_(std::move(lib)), model_(lib_->make()) {
    if (!model_) throw std::bad_alloc();
    const py::dict shape = py::module_::import("json").attr("loads")(std::string(lib_->shape(model_)));
    nq_ = shape["nq"].cast<int>();
    nu_ = shape["nu"].cast<int>();
    nb_ = shape["nb"].cast<int>();
  }
  ~Instance() { lib_->release(model_); }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  std::string shape() const { return lib_->shape(model_); }

  void setParameter(const std::string& name, double value) {
    std::lock_guard<std::mutex> lock(mutex_);
    check(lib_->setParameter(model_, name.c_str(), value));
  }

  std::tuple<Array, Array> initialState() {
    Array q(nq_), u(nu_);
    std::lock_guard<std::mutex> lock(mutex_);
    check(lib_->initialState(model_, q.mutable_data(), u.mutable_data()));
    return {q, u};
  }

  Array forwardDynamics(double t, const Array& q, const Array& u, const py::object& fext) {
    sized(q, nq_, "q");
    sized(u, nu_, "u");
    Array forces = externalForces(fext);
    Array udot(nu_);
    int status = 0;
    {
      py::gil_scoped_release released;
      std::lock_guard<std::mutex> lock(mutex_);
      status = lib_->forwardDynamics(model_, t, q.data(), u.data(), fext.is_none() ? nullptr : forces.data(),
                                      udot.mutable_data());
    }
    check(status);
    return udot;
  }

  std::tuple<Array, Array, Array> derivatives(double t, const Array& q, const Array& u) {
    sized(q, nq_, "q");
    sized(u, nu_, "u");
    Array dq({nu_, nu_}), du({nu_, nu_}), dtau({nu_, nu_});
    int status = 0;
    {
      py::gil_scoped_release released;
      std::lock_guard<std::mutex> lock(mutex_);
      status = lib_->derivatives(model_, t, q.data(), u.data(), dq.mutable_data(), du.mutable_data(),
                                  dtau.mutable_data());
    }
    check(status);
    return {dq, du, dtau};
  }

  // [(key, element, values)] in evaluate's order.
  py::list evaluate(double t, const Array& q, const Array& u, const py::object& fext, bool withDerivatives) {
    sized(q, nq_, "q");
    sized(u, nu_, "u");
    Array forces = externalForces(fext);
    struct Record {
      std::string key;
      int element;
      std::vector<double> values;
    };
    std::vector<Record> records;
    int status = 0;
    const auto collect = [](void* context, const char* key, int element, const double* values, int count) {
      static_cast<std::vector<Record>*>(context)->push_back({key, element, std::vector<double>(values, values + count)});
    };
    {
      py::gil_scoped_release released;
      std::lock_guard<std::mutex> lock(mutex_);
      status = lib_->evaluate(model_, t, q.data(), u.data(), fext.is_none() ? nullptr : forces.data(),
                               withDerivatives ? 1 : 0, collect, &records);
    }
    check(status);
    py::list out;
    for (const Record& r : records)
      out.append(py::make_tuple(r.key, r.element, Array(py::ssize_t(r.values.size()), r.values.data())));
    return out;
  }

  // (status, message, column names, rows x columns): the rows a failed run
  // kept come back too. `progress(fraction)`, if given, is called at most
  // every 0.1 s; Ctrl-C (SIGINT) stops the run after its row, status 130.
  std::tuple<int, std::string, std::vector<std::string>, Array> simulate(const std::vector<std::string>& args,
                                                                         const py::object& progress) {
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    Progress p{progress, std::chrono::steady_clock::now(), false};
    int status = 0;
    std::string message;
    std::vector<std::string> names;
    long rows = 0;
    int columns = 0;
    const double* values = nullptr;
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    {
      py::gil_scoped_release released;
      lock.lock();
      status = lib_->simulate(model_, int(argv.size()), argv.data(), &Progress::call, &p);
      message = lib_->error(model_);
      lib_->table(model_, &rows, &columns, &values);
      for (int c = 0; c < columns; ++c) names.emplace_back(lib_->columnName(model_, c));
    }
    Array table({py::ssize_t(rows), py::ssize_t(columns)});
    std::copy(values, values + rows * columns, table.mutable_data());
    lock.unlock();
    if (p.failed) throw py::error_already_set();  // KeyboardInterrupt, or what progress raised
    return {status, message, names, table};
  }

 private:
  struct Progress {
    py::object callback;
    std::chrono::steady_clock::time_point last;
    bool failed;
    // Called without the GIL after every row: takes it every 0.1 s to run
    // Python's signal handlers (Ctrl-C) and the callback.
    static int call(void* context, double fraction) {
      auto& p = *static_cast<Progress*>(context);
      const auto now = std::chrono::steady_clock::now();
      if (fraction < 1.0 && now - p.last < std::chrono::milliseconds(100)) return 0;
      p.last = now;
      py::gil_scoped_acquire held;
      if (PyErr_CheckSignals() != 0) {
        p.failed = true;
        return 1;
      }
      if (p.callback.is_none()) return 0;
      try {
        p.callback(fraction);
      } catch (py::error_already_set& e) {
        e.restore();
        p.failed = true;
        return 1;
      }
      return 0;
    }
  };

  void check(int status) const {
    if (status != 0) throw std::runtime_error(lib_->error(model_));
  }
  static void sized(const Array& a, int n, const char* what) {
    if (a.ndim() != 1 || a.shape(0) != n)
      throw py::value_error(std::string(what) + " must have " + std::to_string(n) + " entries, not " +
                            std::to_string(a.ndim() == 1 ? a.shape(0) : a.size()));
  }
  // None, or nb x 6 ([n; f] per body): as the C interface takes them.
  Array externalForces(const py::object& fext) const {
    if (fext.is_none()) return Array(0);
    Array a = fext.cast<Array>();
    if (a.size() != py::ssize_t(6) * nb_)
      throw py::value_error("external_forces must be " + std::to_string(nb_) + " x 6 ([n; f] per body), not " +
                            std::to_string(a.size()) + " numbers");
    return a;
  }

  std::shared_ptr<Library> lib_;
  capstan_model* model_;
  int nq_ = 0, nu_ = 0, nb_ = 0;
  std::mutex mutex_;
};

}  // namespace

PYBIND11_MODULE(_capstan, m) {
  m.doc() = "A Capstan model library (capstan/model_library.h) loaded into Python; use the `capstan` package.";
  m.attr("LIBRARY_VERSION") = CAPSTAN_LIBRARY_VERSION;
  py::class_<Library, std::shared_ptr<Library>>(m, "Library")
      .def(py::init<const std::string&>())
      .def_property_readonly("path", &Library::path)
      .def("instance", [](const std::shared_ptr<Library>& lib) { return std::make_unique<Instance>(lib); });
  py::class_<Instance>(m, "Instance")
      .def("shape", &Instance::shape)
      .def("set_parameter", &Instance::setParameter)
      .def("initial_state", &Instance::initialState)
      .def("forward_dynamics", &Instance::forwardDynamics)
      .def("derivatives", &Instance::derivatives)
      .def("evaluate", &Instance::evaluate)
      .def("simulate", &Instance::simulate);
}
