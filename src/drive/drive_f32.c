/* The drivers on fp32 matrices: drive_rows.h over the fp32 kernel tables. */
#include "kernels.h"

#define SN_T           float
#define SN_KT          sn_kern
#define SN_KERN_FOR    sn_kern_for
#define SN_DRIVE_TABLE sn_drive_f32
#include "drive_rows.h"
