// Everything a C++ user needs: #include <convjit/convjit.hpp>.
#pragma once

#include "convjit/convjit.h"
#include "convjit/dims.hpp"
#include "convjit/error.hpp"
#include "convjit/ops.hpp"
