/* Symbol visibility: the library is built with hidden visibility; only what is marked here is
 * part of its ABI. */
#ifndef CONVJIT_EXPORT_H
#define CONVJIT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define CONVJIT_PUBLIC __attribute__((visibility("default")))
#else
#define CONVJIT_PUBLIC
#endif

#endif /* CONVJIT_EXPORT_H */
