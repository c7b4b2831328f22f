// The bundled Stan's sample writer (runner/engines/stan_build.py builds httpstan's services with it): each draw's
// values as the doubles they are, buffered, where httpstan's socket_writer formatted every draw as a JSON object
// of names and shortest-round-trip decimals, two send() calls a draw, and the reader parsed them back.
//
// What the socket carries: the line "stanjax-draws 1", the line of column names joined by tabs, then every draw's
// columns as native-endian float64, draw after draw. Messages (adaptation's step size and metric) are not sent:
// every draw carries its step size; nothing reads the metric.
//
// A chain the bundled engine forks has STANJAX_DRAWS_WRITER set and writes so (sample_writer below); any other
// caller of the same module (pystan's server, which the density check and the tests sample through) keeps
// httpstan's writer, whose JSON it reads.
#ifndef STANJAX_DRAWS_WRITER_HPP
#define STANJAX_DRAWS_WRITER_HPP

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stan/callbacks/writer.hpp>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace stanjax {

class draws_writer : public stan::callbacks::writer {
 public:
  explicit draws_writer(const std::string &path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof(address.sun_path)) throw std::runtime_error("socket path too long: " + path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd_ == -1 || ::connect(fd_, reinterpret_cast<const sockaddr *>(&address), sizeof(address)) == -1)
      throw std::runtime_error("draws_writer: connect(" + path + "): " + std::strerror(errno));
    buffer_.reserve(FLUSH_BYTES + 4096);
  }

  ~draws_writer() {
    try {
      flush();
    } catch (const std::exception &) {  // the reader is gone: nothing is left to tell
    }
    ::close(fd_);
  }

  draws_writer(const draws_writer &) = delete;
  draws_writer &operator=(const draws_writer &) = delete;

  void operator()(const std::vector<std::string> &names) {
    std::string header = "stanjax-draws 1\n";
    for (std::size_t i = 0; i < names.size(); ++i) header += (i ? "\t" : "") + names[i];
    header += "\n";
    append(header.data(), header.size());
  }

  void operator()(const std::vector<double> &state) {
    append(reinterpret_cast<const char *>(state.data()), state.size() * sizeof(double));
  }

  void operator()(const std::string &) {}
  void operator()() {}

 private:
  static constexpr std::size_t FLUSH_BYTES = 1 << 16;
  int fd_ = -1;
  std::vector<char> buffer_;

  void append(const char *data, std::size_t size) {
    buffer_.insert(buffer_.end(), data, data + size);
    if (buffer_.size() >= FLUSH_BYTES) flush();
  }

  void flush() {
    const char *data = buffer_.data();
    std::size_t left = buffer_.size();
    while (left > 0) {
      ssize_t sent = ::send(fd_, data, left, MSG_NOSIGNAL);
      if (sent == -1) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("draws_writer: send(): ") + std::strerror(errno));
      }
      data += sent;
      left -= static_cast<std::size_t>(sent);
    }
    buffer_.clear();
  }
};

inline stan::callbacks::writer *sample_writer(const std::string &socket_filename) {
  if (std::getenv("STANJAX_DRAWS_WRITER")) return new draws_writer(socket_filename);
  return new stan::callbacks::socket_writer(socket_filename, "sample_writer:");
}

}  // namespace stanjax
#endif  // STANJAX_DRAWS_WRITER_HPP
