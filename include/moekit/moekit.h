// Everything public in moekit.
#pragma once

#include "moekit/build_config.h"
#include "moekit/dlpack.h"
#include "moekit/dtype.h"
#include "moekit/float_formats.h"
#include "moekit/status.h"
#include "moekit/system_info.h"
#include "moekit/tensor.h"
