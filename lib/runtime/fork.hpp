// fork() safety: the runtimes alive in a process, held still while it forks (pthread_atfork), so
// that neither the parent nor the child finds a runtime's lock held by a thread that is not there.
// In the child, compiles restart on a fresh worker, convjit_runtime_wait and exit return, and
// calls run on the calling thread (lib/threads/threads.hpp).
#pragma once

#include "convjit/runtime.hpp"

namespace convjit::detail {

void register_for_fork(Runtime::Impl* runtime);
void unregister_for_fork(Runtime::Impl* runtime);

}  // namespace convjit::detail
