/* The drivers on bf16 matrices: drive_rows.h over the bf16 kernel tables. */
#include "kernels.h"

#define SN_T           sn_bf16
#define SN_KT          sn_kern16
#define SN_KERN_FOR    sn_kern16_for
#define SN_DRIVE_TABLE sn_drive_bf16
#include "drive_rows.h"
