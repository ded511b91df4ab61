// A small source file written for the miner's test.
#include "check.h"

void validateWorld(int mpiSize, int tp, int pp)
{
    TLLM_CHECK_WITH_INFO(mpiSize == tp * pp,
        "World size %d does not equal tensor parallelism %d times pipeline parallelism %d", mpiSize, tp, pp);
    TLLM_CHECK(mpiSize >= tp && pipelineStages(pp) > 0);
    TLLM_LOG_WARNING("Rank layout " "was guessed from the environment");
    if (tp > 64)
    {
        TLLM_THROW("Tensor parallelism of %d is not supported here", tp);
    }
}

#define CHECK_CALL(name, call) \
    do { int ret = call; if (ret != 0) { \
        TLLM_LOG_WARNING("Call to " name " failed with error %s", strerror(ret)); \
    } } while (0)

void countTokens(unsigned long long n)
{
    TLLM_LOG_ERROR("Token count %" PRIu64 " is above the " /* the build's */ "configured limit", n);
}
