"""The names under which HTTP APIs and the major clouds carry credentials: headers never recorded, query parameters
masked. One list for the adapters (which leave these out of the events) and the redactor (which redacts a value
stored under such a name anywhere, and the parameter in a URL written in text).

Azure: Ocp-Apim-Subscription-Key (API Management, Cognitive Services) and `?subscription-key=`, X-Functions-Key and
`?code=` (Functions), api-key (Azure OpenAI), a SAS's `sig=`. Google Cloud: x-goog-api-key and `?key=`, a signed
URL's X-Goog-Signature and X-Goog-Credential, x-goog-iam-authorization-token. AWS: X-Amz-Security-Token, a presigned
URL's X-Amz-Signature and X-Amz-Credential, Signature Version 2's AWSAccessKeyId and Signature.
"""

REDACTED = "***REDACTED***"  # what stands where a secret was, everywhere wop writes or shows one

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token",
    "private-token", "x-vault-token",
    "ocp-apim-subscription-key", "x-functions-key",
    "x-goog-api-key", "x-goog-iam-authorization-token",
    "x-amz-security-token",
})

CREDENTIAL_QUERY_NAMES = frozenset({
    "key", "api_key", "apikey", "api-key", "token", "access_token", "id_token", "refresh_token", "password", "secret",
    "client_secret", "code", "sig", "signature",
    "subscription-key",
    "x-goog-signature", "x-goog-credential",
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid",
})
