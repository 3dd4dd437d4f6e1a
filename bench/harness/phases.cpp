#include "bench/harness/phases.h"

#include <sys/resource.h>

#include <cstdio>

#include "bench/harness/probes.h"

namespace lb::bench {
namespace {

PhaseTime now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + 1e-6 * double(tv.tv_usec); };
  return {wall_seconds(), seconds(u.ru_utime), seconds(u.ru_stime)};
}

struct Clock {
  std::array<PhaseTime, kPhases> spent;
  PhaseTime start;   // of the run
  PhaseTime since;   // when the current phase's clock last started
  int current = -1;  // the innermost open phase; -1: none
  bool started = false;
};

Clock& phase_clock() {
  static Clock c;
  return c;
}

void add(PhaseTime& to, const PhaseTime& from, const PhaseTime& until) {
  to.wall += until.wall - from.wall;
  to.user += until.user - from.user;
  to.sys += until.sys - from.sys;
}

}  // namespace

const char* name(Phase p) {
  switch (p) {
    case Phase::peaks:
      return "peaks";
    case Phase::warm_up:
      return "warm-up";
    case Phase::set_up:
      return "set-up";
    case Phase::verify:
      return "verification";
    case Phase::timed:
      return "timed loops";
    case Phase::probes:
      return "probes";
    case Phase::writing:
      return "writing";
    case Phase::count:
      break;
  }
  return "?";
}

void reset_phases() {
  phase_clock() = Clock{};
  phase_clock().start = now();
  phase_clock().started = true;
}

PhaseScope::PhaseScope(Phase p) : outer_(phase_clock().current) {
  Clock& c = phase_clock();
  const PhaseTime t = now();
  if (!c.started) {
    c.start = t;
    c.started = true;
  }
  if (outer_ >= 0) add(c.spent[size_t(outer_)], c.since, t);
  c.current = int(p);
  c.since = t;
}

PhaseScope::~PhaseScope() {
  Clock& c = phase_clock();
  const PhaseTime t = now();
  add(c.spent[size_t(c.current)], c.since, t);
  c.current = outer_;
  c.since = t;
}

PhaseTotals phase_totals() {
  const Clock& c = phase_clock();
  PhaseTotals t;
  t.phase = c.spent;
  if (c.current >= 0) add(t.phase[size_t(c.current)], c.since, now());
  if (c.started) add(t.total, c.start, now());
  t.other = t.total;
  for (const PhaseTime& p : t.phase) {
    t.other.wall -= p.wall;
    t.other.user -= p.user;
    t.other.sys -= p.sys;
  }
  return t;
}

std::string phases_line(const PhaseTotals& t) {
  std::string out;
  char buf[96];
  auto item = [&](const char* what, const PhaseTime& p) {
    if (p.wall < 0.05) return;
    std::snprintf(buf, sizeof buf, "%s%s %.1f s (sys %.1f)", out.empty() ? "" : ", ", what, p.wall, p.sys);
    out += buf;
  };
  for (int i = 0; i < kPhases; ++i)
    item(name(Phase(i)), t.phase[size_t(i)]);
  item("other", t.other);
  std::snprintf(buf, sizeof buf, "; %.1f s in all, user %.1f s, sys %.1f s", t.total.wall, t.total.user,
                t.total.sys);
  return out + buf;
}

nlohmann::json phases_json(const PhaseTotals& t) {
  auto obj = [](const PhaseTime& p) {
    return nlohmann::json{{"wall_s", p.wall}, {"user_s", p.user}, {"sys_s", p.sys}};
  };
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kPhases; ++i)
    j[name(Phase(i))] = obj(t.phase[size_t(i)]);
  j["other"] = obj(t.other);
  j["total"] = obj(t.total);
  return j;
}

}  // namespace lb::bench
