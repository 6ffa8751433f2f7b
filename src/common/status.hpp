// Internal status: a tops_status_t plus the message that tops_last_error()
// will report. Used by capi and both backends (the CUDA plugin returns it
// across the plugin boundary; both sides are built by one compiler).
#pragma once

#include <string>
#include <utility>

#include "tops/tops.h"

namespace tops {

class Status {
public:
    Status() = default;
    Status(tops_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok() { return Status(); }
    bool is_ok() const { return code_ == TOPS_SUCCESS; }
    tops_status_t code() const { return code_; }
    const std::string& message() const { return message_; }

private:
    tops_status_t code_ = TOPS_SUCCESS;
    std::string message_;
};

// Build a message with operator<<-style concatenation: fmt("x.dims[", i, "] = ", d).
template <class... Parts>
std::string fmt(const Parts&... parts);

}  // namespace tops

#include <sstream>

template <class... Parts>
std::string tops::fmt(const Parts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}

#define TOPS_RETURN_IF_ERROR(expr)              \
    do {                                        \
        ::tops::Status tops_status_ = (expr);   \
        if (!tops_status_.is_ok()) return tops_status_; \
    } while (0)
