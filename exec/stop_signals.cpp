#include "exec/stop_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

namespace cpplan::exec {

namespace {

int g_stop_pipe[2] = {-1, -1};

// Async-signal-safe: hands the signal to the watching thread.
void forward_signal(int signal) {
  const unsigned char s = static_cast<unsigned char>(signal);
  [[maybe_unused]] const ssize_t n = write(g_stop_pipe[1], &s, 1);
}

}  // namespace

void on_stop_signal(std::function<void(int signal)> on_stop) {
  if (pipe2(g_stop_pipe, O_CLOEXEC) != 0) return;  // keep the default action: the rank just ends
  std::thread([on_stop = std::move(on_stop)] {
    unsigned char signal = 0;
    while (read(g_stop_pipe[0], &signal, 1) != 1) {
    }
    on_stop(signal);
    _exit(128 + signal);
  }).detach();
  // A handler, not a blocked mask: threads LibTorch or Gloo started before this call take the
  // signal the same way.
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace cpplan::exec
