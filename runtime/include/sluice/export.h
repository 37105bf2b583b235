/* sluice/export.h: SLUICE_API marks what libsluice exports.
 *
 * Every Sluice library is compiled with -fvisibility=hidden and
 * -fvisibility-inlines-hidden, so the shared libsluice exports only what its
 * public headers mark with SLUICE_API: the C API's functions and the C++
 * classes and functions of the public headers. Everything else, the runtime's
 * internals and the libraries it uses (LuaJIT, SentencePiece, xxHash, libuv,
 * libjpeg, libspng), stays inside it. In the static libraries the mark changes
 * nothing.
 *
 * Usable from C (sluice/sluice.h includes it) and C++.
 */
#ifndef SLUICE_EXPORT_H_
#define SLUICE_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define SLUICE_API __attribute__((visibility("default")))
#else
#define SLUICE_API
#endif

#endif /* SLUICE_EXPORT_H_ */
