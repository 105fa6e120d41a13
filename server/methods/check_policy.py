"""``checkPolicy {cwd, policy?, messages? | sessionId?}`` -> ``{calls, summary}``: what the live server would
decide for each recorded tool call (``threadline policy-check``). A read: its hooks' runs are not stored."""

from protocol.messages import CheckPolicyParams, CheckPolicyResult
from server.methods.registry import reads
from server.services.core import Core
from server.services.policy_check import check_policy as check


@reads("checkPolicy")
async def check_policy(core: Core, params: CheckPolicyParams) -> CheckPolicyResult:
    return await check(core, params)
