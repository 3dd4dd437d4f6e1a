// The sweep's axes, each described once (axes(), axes.cpp): its flag and how its values
// parse, whether `check` takes it, the values it takes for a problem source and a kernel
// when given or not, where a value goes (the problem or the case), its part of the case's
// name, its key in the run's settings and in a case's identity. expand(), case_name(),
// the CLI (run_args.cpp), the run's settings (run.cpp) and case_identity() (results.cpp)
// loop over them: a new axis is one entry of axes().
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/problem.h"
#include "kernels/registry.h"

namespace lb::bench {

struct Case;

// A problem as a source gives it, before the axes: a network's layer is per sample (--batch
// scales its mb), a standard convolution added by --separable-baseline runs without ReLU.
struct Source {
  Problem p;
  bool per_sample = false;
  bool baseline = false;
};

// The values given on the command line, per axis flag; an axis not given has none.
using AxisValues = std::map<std::string, std::vector<std::string>, std::less<>>;

struct Axis {
  std::string_view flag;  // --<flag>
  bool in_check;          // check takes it too (run takes every axis)
  bool of_case;           // sets the case, not its problem: taken per kernel, after the problem's
  // The canonical values of a --flag's list (words such as "all" expanded); throws
  // lb::Error "--<flag> <value>: expected ...".
  std::vector<std::string> (*parse)(const std::string& list);
  // The values a case of `s` on kernel `k` (null for the problem's axes, which come first)
  // takes from those `given` (empty: the axis was not given).
  std::vector<std::string> (*values)(const std::vector<std::string>& given, const Source& s,
                                     const KernelEntry* k);
  void (*set)(Case& c, const std::string& value, const Source& s);
  // The case's part of its name, appended in axes()' order to the problem's name (see
  // case_name()); null: none (the batch is in the problem's name).
  std::string (*name_part)(const Case& c);
  // The run's settings key and its value from what was given (resume and merge compare
  // them); a null value: not written when the axis was not given (older logs resume as
  // they were).
  std::string_view setting;
  std::string (*setting_value)(const std::vector<std::string>& given);
  std::string_view identity;  // the case identity's key ("" : none)
  nlohmann::json (*identity_value)(const Case& c);
};

const std::vector<Axis>& axes();

// <kernel id>/<dtype>/<layer name-mb<batch> or the problem's short name><the axes' parts>
// /threads:<n>, e.g. dense.onednn.default/f32/fc6-mb32-relu_fused/threads:1.
std::string case_name(const Case& c);

// The case's values of every axis with an identity key.
void add_identity(nlohmann::json& j, const Case& c);
// The run's settings of every axis, and the keys among them (those resume and merge
// compare as the selection of cases).
void add_settings(nlohmann::json& j, const AxisValues& given);
std::vector<std::string> axis_settings();

}  // namespace lb::bench
