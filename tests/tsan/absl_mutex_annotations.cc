// LD_PRELOADed into the ThreadSanitizer run's tests (deploy/tsan.sh): makes
// the locking of Debian's absl::Mutex visible to TSan. That libabsl is not
// built with -fsanitize=thread, so its Mutex carries no TSan annotations
// and every absl::Mutex-guarded field touched from two threads would be
// reported as a race. Each wrapper below calls the library's own function
// (dlsym RTLD_NEXT) and tells TSan about the happens-before edge: unlocking
// (or waiting, which unlocks) releases the mutex's address, returning with
// the lock held acquires it. Reader locks are modelled as exclusive ones,
// which can only hide a race between two readers, never invent one. The
// annotation functions are the TSan runtime's, linked into the executable;
// in a process without TSan they are absent (weak) and nothing is told.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

extern "C" {
void AnnotateHappensBefore(const char* file, int line,
                           const volatile void* addr) __attribute__((weak));
void AnnotateHappensAfter(const char* file, int line, const volatile void* addr)
    __attribute__((weak));
}

namespace {

#define SPINNIC_STR2(x) #x
#define SPINNIC_STR(x) SPINNIC_STR2(x)
// Constant-initialised: a process's own static initialisers (absl flags in
// spinnicd) lock mutexes before this library's dynamic initialisers run.
constexpr std::string_view kNamespace =
    SPINNIC_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);

// The library's definition of `name` (mangled, after absl::<ns>::).
template <typename Fn>
Fn Real(const char* name) {
  const std::string symbol = "_ZN4absl" + std::to_string(kNamespace.size()) +
                             std::string(kNamespace) + name;
  void* fn = dlsym(RTLD_NEXT, symbol.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_mutex_annotations: no %s\n", symbol.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

void Release(const void* mu) {
  if (AnnotateHappensBefore) AnnotateHappensBefore(__FILE__, __LINE__, mu);
}
void Acquire(const void* mu) {
  if (AnnotateHappensAfter) AnnotateHappensAfter(__FILE__, __LINE__, mu);
}

// A condition is evaluated with the mutex held, but often inside the
// library, by whichever thread holds it then (an unlocker evaluates its
// waiters'), between an internal lock and unlock that the wrappers do not
// see: the wrapped condition acquires the mutex before and releases it
// after each evaluation.
struct Annotated {
  const absl::Condition* condition;
  const absl::Mutex* mu;
};
bool EvalAnnotated(Annotated* a) {
  Acquire(a->mu);
  const bool met = a->condition->Eval();
  Release(a->mu);
  return met;
}

using Plain = void (*)(absl::Mutex*);
using Try = bool (*)(absl::Mutex*);
using When = void (*)(absl::Mutex*, const absl::Condition&);
using WhenFor = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using WhenUntil = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const Plain real = Real<Plain>("5Mutex4LockEv");
  real(this);
  Acquire(this);
}
void Mutex::ReaderLock() {
  static const Plain real = Real<Plain>("5Mutex10ReaderLockEv");
  real(this);
  Acquire(this);
}
bool Mutex::TryLock() {
  static const Try real = Real<Try>("5Mutex7TryLockEv");
  bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}
bool Mutex::ReaderTryLock() {
  static const Try real = Real<Try>("5Mutex13ReaderTryLockEv");
  bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}
void Mutex::Unlock() {
  static const Plain real = Real<Plain>("5Mutex6UnlockEv");
  Release(this);
  real(this);
}
void Mutex::ReaderUnlock() {
  static const Plain real = Real<Plain>("5Mutex12ReaderUnlockEv");
  Release(this);
  real(this);
}
void Mutex::LockWhen(const Condition& cond) {
  static const When real = Real<When>("5Mutex8LockWhenERKNS0_9ConditionE");
  Annotated a{&cond, this};
  real(this, absl::Condition(&EvalAnnotated, &a));
  Acquire(this);
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  static const When real =
      Real<When>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Annotated a{&cond, this};
  real(this, absl::Condition(&EvalAnnotated, &a));
  Acquire(this);
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const WhenFor real = Real<WhenFor>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), timeout);
  Acquire(this);
  return met;
}
bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const WhenFor real = Real<WhenFor>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), timeout);
  Acquire(this);
  return met;
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const WhenUntil real = Real<WhenUntil>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), deadline);
  Acquire(this);
  return met;
}
bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const WhenUntil real = Real<WhenUntil>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), deadline);
  Acquire(this);
  return met;
}
void Mutex::Await(const Condition& cond) {
  static const When real = Real<When>("5Mutex5AwaitERKNS0_9ConditionE");
  Release(this);
  Annotated a{&cond, this};
  real(this, absl::Condition(&EvalAnnotated, &a));
  Acquire(this);
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const WhenFor real =
      Real<WhenFor>("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Release(this);
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), timeout);
  Acquire(this);
  return met;
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const WhenUntil real =
      Real<WhenUntil>("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Release(this);
  Annotated a{&cond, this};
  bool met = real(this, absl::Condition(&EvalAnnotated, &a), deadline);
  Acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static const auto real =
      Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Release(mu);
  real(this, mu);
  Acquire(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Release(mu);
  bool timed_out = real(this, mu, timeout);
  Acquire(mu);
  return timed_out;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Release(mu);
  bool timed_out = real(this, mu, deadline);
  Acquire(mu);
  return timed_out;
}

ABSL_NAMESPACE_END
}  // namespace absl
