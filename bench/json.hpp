// Minimal streaming JSON writer for tops-bench's --json output.
#pragma once

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace bench {

class JsonWriter {
public:
    explicit JsonWriter(std::ostream& os) : os_(os) {}

    JsonWriter& begin_object(const char* key = nullptr) { return open(key, '{'); }
    JsonWriter& end_object() { return close('}'); }
    JsonWriter& begin_array(const char* key = nullptr) { return open(key, '['); }
    JsonWriter& end_array() { return close(']'); }

    JsonWriter& value(const char* key, const std::string& v) {
        prefix(key);
        quoted(v);
        return *this;
    }
    JsonWriter& value(const char* key, const char* v) { return value(key, std::string(v ? v : "")); }
    JsonWriter& value(const char* key, bool v) {
        prefix(key);
        os_ << (v ? "true" : "false");
        return *this;
    }
    JsonWriter& value(const char* key, double v) {
        prefix(key);
        if (!std::isfinite(v)) {
            os_ << "null";
        } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.6g", v);
            os_ << buf;
        }
        return *this;
    }
    JsonWriter& value(const char* key, int v) { return value(key, static_cast<long long>(v)); }
    JsonWriter& value(const char* key, long long v) {
        prefix(key);
        os_ << v;
        return *this;
    }
    JsonWriter& value(const char* key, long v) { return value(key, static_cast<long long>(v)); }
    JsonWriter& value(const char* key, unsigned long v) { return value(key, static_cast<long long>(v)); }
    JsonWriter& null(const char* key) {
        prefix(key);
        os_ << "null";
        return *this;
    }
    // A short array of numbers on one line.
    template <class T>
    JsonWriter& array(const char* key, const std::vector<T>& v) {
        prefix(key);
        os_ << '[';
        for (size_t i = 0; i < v.size(); ++i) os_ << (i ? ", " : "") << v[i];
        os_ << ']';
        return *this;
    }

private:
    JsonWriter& open(const char* key, char c) {
        prefix(key);
        os_ << c;
        first_.push_back(true);
        return *this;
    }
    JsonWriter& close(char c) {
        first_.pop_back();
        os_ << '\n' << std::string(2 * first_.size(), ' ') << c;
        if (first_.empty()) os_ << '\n';
        return *this;
    }
    void prefix(const char* key) {
        if (!first_.empty()) {
            if (!first_.back()) os_ << ',';
            first_.back() = false;
            os_ << '\n' << std::string(2 * first_.size(), ' ');
        }
        if (key) {
            quoted(key);
            os_ << ": ";
        }
    }
    void quoted(const std::string& s) {
        os_ << '"';
        for (unsigned char ch : s) {
            if (ch == '"' || ch == '\\') {
                os_ << '\\' << ch;
            } else if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                os_ << buf;
            } else {
                os_ << ch;
            }
        }
        os_ << '"';
    }

    std::ostream& os_;
    std::vector<bool> first_;
};

}  // namespace bench
