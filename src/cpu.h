/* Runtime CPU detection: which kernel paths this build and this CPU can run. Nothing is cached:
 * every query executes CPUID (a few hundred cycles), so there is no global state to initialise. */
#ifndef SN_CPU_H
#define SN_CPU_H

#include "siamesenorm.h"

/* 1 if path isa (not SN_ISA_AUTO) was compiled in and the CPU and OS support it. */
int sn_cpu_has(sn_isa isa);

/* The best available path (never SN_ISA_AUTO). */
sn_isa sn_cpu_best(void);

#endif
