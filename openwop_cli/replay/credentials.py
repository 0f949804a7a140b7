"""Placeholder credentials for an offline replay: SDKs refuse to start without an API key, yet a replay never
sends one (every call is served from the capture), so CI needs no secret.

Only variables the environment does not already set are filled in, and only in the replayed program's
environment: the replay capture records environment names from wop's own environment, never these.
"""

import os
from collections.abc import Mapping

PLACEHOLDER = "wop-replay-placeholder-key"
SDK_VARIABLES = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MISTRAL_API_KEY", "COHERE_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY",
    "DEEPSEEK_API_KEY", "XAI_API_KEY", "FIREWORKS_API_KEY", "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
)
GEMINI_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # google-genai warns when both are set: fill in one


def placeholder_credentials(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The SDK credential variables missing from environ, each with a placeholder value."""
    env = os.environ if environ is None else environ
    missing = {name: PLACEHOLDER for name in SDK_VARIABLES if not env.get(name)}
    if not any(env.get(name) for name in GEMINI_VARIABLES):
        missing[GEMINI_VARIABLES[0]] = PLACEHOLDER
    return missing
