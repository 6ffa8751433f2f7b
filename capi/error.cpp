// Status strings, the thread-local last error, version and log routing.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

#include "capi/internal.hpp"

namespace {

thread_local std::string t_last_error;

struct LogState {
    std::mutex mu;
    tops_log_fn fn = nullptr;
    void* user = nullptr;
    int level = -1;  // -1: not set, use TOPS_VERBOSE
};

LogState& log_state() {
    static LogState s;
    return s;
}

int env_verbose() {
    static const int level = [] {
        const char* v = std::getenv("TOPS_VERBOSE");
        return v ? std::atoi(v) : 0;
    }();
    return level;
}

}  // namespace

namespace tops::capi {

tops_status_t report(const Status& s) {
    t_last_error = s.message();
    return s.code();
}

tops_status_t success() {
    t_last_error.clear();
    return TOPS_SUCCESS;
}

bool log_enabled(int level) {
    LogState& s = log_state();
    std::lock_guard<std::mutex> lock(s.mu);
    const int active = s.level >= 0 ? s.level : env_verbose();
    return level <= active;
}

void log_line(int level, const std::string& line) {
    LogState& s = log_state();
    std::lock_guard<std::mutex> lock(s.mu);
    const int active = s.level >= 0 ? s.level : env_verbose();
    if (level > active) return;
    if (s.fn) {
        s.fn(level, line.c_str(), s.user);
    } else {
        std::fprintf(stderr, "tops_verbose,%s\n", line.c_str());
    }
}

}  // namespace tops::capi

extern "C" {

TOPS_API const char* tops_status_string(tops_status_t status) {
    switch (status) {
        case TOPS_SUCCESS: return "TOPS_SUCCESS";
        case TOPS_ERROR_INVALID_ARGUMENT: return "TOPS_ERROR_INVALID_ARGUMENT";
        case TOPS_ERROR_NULL_POINTER: return "TOPS_ERROR_NULL_POINTER";
        case TOPS_ERROR_BAD_STRUCT_SIZE: return "TOPS_ERROR_BAD_STRUCT_SIZE";
        case TOPS_ERROR_BAD_DTYPE: return "TOPS_ERROR_BAD_DTYPE";
        case TOPS_ERROR_BAD_RANK: return "TOPS_ERROR_BAD_RANK";
        case TOPS_ERROR_BAD_SHAPE: return "TOPS_ERROR_BAD_SHAPE";
        case TOPS_ERROR_BAD_STRIDE: return "TOPS_ERROR_BAD_STRIDE";
        case TOPS_ERROR_BAD_AXIS: return "TOPS_ERROR_BAD_AXIS";
        case TOPS_ERROR_MISSING_ARGUMENT: return "TOPS_ERROR_MISSING_ARGUMENT";
        case TOPS_ERROR_UNKNOWN_ARGUMENT: return "TOPS_ERROR_UNKNOWN_ARGUMENT";
        case TOPS_ERROR_WORKSPACE_TOO_SMALL: return "TOPS_ERROR_WORKSPACE_TOO_SMALL";
        case TOPS_ERROR_CONTEXT_MISMATCH: return "TOPS_ERROR_CONTEXT_MISMATCH";
        case TOPS_ERROR_NOT_SUPPORTED: return "TOPS_ERROR_NOT_SUPPORTED";
        case TOPS_ERROR_BACKEND_UNAVAILABLE: return "TOPS_ERROR_BACKEND_UNAVAILABLE";
        case TOPS_ERROR_OUT_OF_MEMORY: return "TOPS_ERROR_OUT_OF_MEMORY";
        case TOPS_ERROR_DEVICE: return "TOPS_ERROR_DEVICE";
        case TOPS_ERROR_DEVICE_LAUNCH: return "TOPS_ERROR_DEVICE_LAUNCH";
        case TOPS_ERROR_INTERNAL: return "TOPS_ERROR_INTERNAL";
    }
    return "TOPS_ERROR_UNKNOWN_STATUS";
}

TOPS_API const char* tops_last_error(void) { return t_last_error.c_str(); }

TOPS_API tops_status_t tops_set_log_callback(tops_log_fn fn, void* user_data, int level) {
    if (level < 0 || level > 2) {
        return tops::capi::report(tops::Status(
            TOPS_ERROR_INVALID_ARGUMENT,
            tops::fmt("tops_set_log_callback: level ", level, " is outside [0, 2]")));
    }
    LogState& s = log_state();
    {
        std::lock_guard<std::mutex> lock(s.mu);
        s.fn = fn;
        s.user = user_data;
        s.level = level;
    }
    return tops::capi::success();
}

TOPS_API int tops_version_number(void) {
    return TOPS_VERSION_MAJOR * 10000 + TOPS_VERSION_MINOR * 100 + TOPS_VERSION_PATCH;
}

TOPS_API const char* tops_version(void) {
#define TOPS_STR2(x) #x
#define TOPS_STR(x) TOPS_STR2(x)
#if defined(TOPS_WITH_CUDA_PLUGIN)
    return "tops " TOPS_STR(TOPS_VERSION_MAJOR) "." TOPS_STR(TOPS_VERSION_MINOR) "." TOPS_STR(
        TOPS_VERSION_PATCH) " (backends: cpu, cuda-plugin)";
#else
    return "tops " TOPS_STR(TOPS_VERSION_MAJOR) "." TOPS_STR(TOPS_VERSION_MINOR) "." TOPS_STR(
        TOPS_VERSION_PATCH) " (backends: cpu)";
#endif
#undef TOPS_STR
#undef TOPS_STR2
}

}  // extern "C"
