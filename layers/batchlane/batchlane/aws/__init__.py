"""boto3 adapters. Endpoints come from AWS_ENDPOINT_URL[_<SERVICE>] (boto3 reads them itself)."""
