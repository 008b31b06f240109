"""Pure rules: no Lambda, boto3 or SQL here."""
