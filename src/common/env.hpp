// Environment switches read when an op is planned (never in a kernel):
// TOPS_<PATH>=0 turns a fast path off and =1 forces one where a plan offers
// that, for A/B measurements; unset or any other value keeps the default.
// performance.md lists the switches next to the tables they reproduce.
#pragma once

#include <cstdlib>

namespace tops {

// The first character of environment variable `name`, or '\0' when unset.
inline char env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v ? v[0] : '\0';
}

// Whether `name` is set to 0: the path it names is switched off.
inline bool env_switched_off(const char* name) { return env_flag(name) == '0'; }

}  // namespace tops
