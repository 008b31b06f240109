"""The offline stack: everything the deployment has, on 127.0.0.1, with no AWS account.

Never shipped in the Lambda layer.
"""
