/* Runtime CPU detection: which kernel paths this build and this CPU can run. CPUID runs on the
 * first query of the process (it costs tens of microseconds in a virtual machine); the answer,
 * a property of the hardware, is then kept in one atomic word (no initialisation needed). */
#ifndef SN_CPU_H
#define SN_CPU_H

#include "siamesenorm.h"

/* 1 if path isa (not SN_ISA_AUTO) was compiled in and the CPU and OS support it. */
int sn_cpu_has(sn_isa isa);

/* The best available path (never SN_ISA_AUTO). */
sn_isa sn_cpu_best(void);

#endif
