// gradwire._C: the DDP hook's state (ddp_hook.h) and local SGD (local_sgd.h) for
// python/gradwire/torch.py. gradwire's errors reach Python as ValueError (a configuration, a
// layout, bad arguments) or RuntimeError (a peer's payload, a collective), with gradwire's
// message. Every call that runs a collective releases the GIL while it waits: the process group
// may need it to finish other work (a future's Python callback) on its own threads.
#include <torch/python.h>

#include <map>
#include <string>
#include <vector>

#include "compressors/sparse_message.h"
#include "ddp_hook.h"
#include "local_sgd.h"
#include "plugin/config/registry.h"

namespace py = pybind11;
using gw::torch_bridge::DdpHook;
using gw::torch_bridge::LocalSgd;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "gradwire's C++ layer for PyTorch (see gradwire.torch)";
  py::register_exception<gw::config::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::register_exception<gw::compressors::PayloadError>(m, "PayloadError", PyExc_RuntimeError);
  py::register_exception<gw::CommError>(m, "CommError", PyExc_RuntimeError);

  m.def("allreduce_bytes", &gw::CountingCommunicator::allreduce_bytes, py::arg("count"),
        py::arg("element_size"), py::arg("rank"), py::arg("size"),
        "The bytes rank `rank` of `size` sends for one allreduce of `count` elements "
        "(Note [What the counters count]).");

  py::class_<DdpHook>(m, "DdpHook")
      .def(py::init<c10::intrusive_ptr<c10d::ProcessGroup>, std::vector<std::int64_t>,
                    std::vector<std::int64_t>, const std::map<std::string, std::string>&, double,
                    bool, const std::string&>(),
           py::arg("group"), py::arg("numels"), py::arg("rows"), py::arg("settings"),
           py::arg("momentum"), py::arg("nesterov"), py::arg("device") = "cpu",
           py::call_guard<py::gil_scoped_release>())
      .def("exchange", &DdpHook::exchange, py::arg("buffer"), py::arg("parameters"),
           py::arg("last"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("compressor", &DdpHook::compressor)
      .def_property_readonly("device", &DdpHook::device)
      .def_property_readonly("stream_handle", &DdpHook::stream_handle)
      .def_property_readonly("step", &DdpHook::step)
      .def_property_readonly("world_size", &DdpHook::world_size)
      .def_property_readonly("gradient_bytes_sent", &DdpHook::gradient_bytes_sent)
      .def_property_readonly("warmup_end_step", &DdpHook::warmup_end_step)
      .def("kept", &DdpHook::kept, py::arg("parameter"))
      .def("save_state", [](const DdpHook& h) { return py::bytes(h.save_state()); })
      .def("load_state", [](DdpHook& h, const py::bytes& b) { h.load_state(std::string(b)); });

  py::class_<LocalSgd>(m, "LocalSgd")
      .def(py::init<c10::intrusive_ptr<c10d::ProcessGroup>,
                    const std::map<std::string, std::string>&>(),
           py::arg("group"), py::arg("settings"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("step", &LocalSgd::step)
      .def_property_readonly("period", &LocalSgd::period)
      .def_property_readonly("mode", &LocalSgd::mode)
      .def_property_readonly("exchanges_gradients", &LocalSgd::exchanges_gradients)
      .def_property_readonly("parameter_bytes_sent", &LocalSgd::parameter_bytes_sent)
      .def("after_step", &LocalSgd::after_step, py::arg("parameters"), py::arg("loss"),
           py::arg("lr"), py::call_guard<py::gil_scoped_release>())
      .def("save_state", [](const LocalSgd& l) { return py::bytes(l.save_state()); })
      .def("load_state", [](LocalSgd& l, const py::bytes& b) { l.load_state(std::string(b)); });
}
