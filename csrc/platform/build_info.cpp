#include "platform/build_info.hpp"

#include "platform/build_config.hpp"

namespace itercast::platform {

BuildInfo build_info() {
    return {ITERCAST_VERSION, ITERCAST_COMPILER, ITERCAST_BUILD_TYPE, ITERCAST_CXX_FLAGS, ITERCAST_LINK_FLAGS};
}

}  // namespace itercast::platform
