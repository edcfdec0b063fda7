"""The agent runtime: the runner, the request bytes, the responses, the destination."""
