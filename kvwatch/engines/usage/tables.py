"""The top-level keys the two gateway tables the usage parser knows by itself are known to carry: a row's
other keys are counted (kvwatch.parsers.drift), never ignored silently; the row is read for what it knows.

"Known" is what the format carries, not what kvwatch reads (most of a row is spend, keys, users and
text kvwatch never reads):

- new-api `logs` (QuantumNous/new-api `model/log.go`, `Log`): its JSON names, and the database column
  of the one field named otherwise (`ChannelId`: JSON `channel`, column `channel_id`), as the `sql`
  source hands a row on; later trees' `Log` adds `request_id` and `upstream_request_id` (JSON
  `omitempty`), known too. A fork's own columns are not: they are counted.
- LiteLLM (litellm 1.60.0 to 1.110.2): a `LiteLLM_SpendLogs` row (`litellm/proxy/schema.prisma`, its
  columns, `created_at` and `updated_at` included), the `SpendLogsPayload` written to it
  (`litellm/proxy/_types.py`), and the `StandardLoggingPayload` every LiteLLM logger is handed
  (`litellm/types/utils.py`), of which kvwatch's own callback (kvwatch.engines.usage.litellm_hook)
  writes a subset.

A row of any other shape (a gateway's own JSON log around a usage object) has no declared keys: its
keys are that gateway's, and none is counted.
"""

from __future__ import annotations

NEWAPI = frozenset(
    {
        "id", "user_id", "created_at", "type", "content", "username", "token_name", "model_name", "quota",
        "prompt_tokens", "completion_tokens", "use_time", "is_stream", "channel", "channel_id",
        "channel_name", "token_id", "group", "ip", "other", "request_id", "upstream_request_id",
    }
)  # fmt: skip

_SPEND_LOGS = {
    # schema.prisma `model LiteLLM_SpendLogs` (1.110.2: every column of 1.60.0 and 1.80.0 is in it)
    "request_id", "call_type", "api_key", "spend", "total_tokens", "prompt_tokens", "completion_tokens",
    "startTime", "endTime", "request_duration_ms", "completionStartTime", "model", "model_id",
    "model_group", "custom_llm_provider", "api_base", "user", "metadata", "cache_hit", "cache_key",
    "request_tags", "team_id", "organization_id", "end_user", "requester_ip_address", "messages",
    "response", "session_id", "status", "mcp_namespaced_tool_name", "billing_agent_id", "agent_id",
    "proxy_server_request", "litellm_call_id", "created_at", "updated_at",
    # SpendLogsPayload's beyond the columns (1.110.2)
    "accounting_delivery_id", "accounting_log_disabled", "accounting_payload",
}  # fmt: skip
_STANDARD_LOGGING = {
    # StandardLoggingPayload (1.108.7; 1.110.2 adds `cost_finalized`)
    "id", "trace_id", "session_id", "litellm_call_id", "call_type", "stream", "response_cost",
    "cost_breakdown", "autorouter_savings", "autorouter_savings_estimate",
    "autorouter_baseline_observation", "response_cost_failure_debug_info", "zero_cost_diagnostic",
    "status", "status_fields", "custom_llm_provider", "total_tokens", "prompt_tokens",
    "completion_tokens", "startTime", "endTime", "completionStartTime", "response_time",
    "model_map_information", "model", "model_id", "model_group", "api_base", "metadata", "cache_hit",
    "cache_key", "saved_cache_cost", "request_tags", "request_model_access_groups", "end_user",
    "requester_ip_address", "user_agent", "messages", "response", "error_str", "error_information",
    "model_parameters", "hidden_params", "guardrail_information", "standard_built_in_tools_params",
    "cost_finalized",
}  # fmt: skip
LITELLM = frozenset(_SPEND_LOGS | _STANDARD_LOGGING)

#: The known keys of each table row kind (kvwatch.engines.usage.parser's `_table_row`).
KNOWN = {"newapi": NEWAPI, "litellm": LITELLM}
