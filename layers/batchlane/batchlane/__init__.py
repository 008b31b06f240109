"""batchlane: large PDFs to Markdown with Claude on Amazon Bedrock, batch lane at half price.

The package is shipped to Lambda as a layer (without ``local/`` and ``cli/``) and imported
by every handler in ``functions/``, the CLI and the offline stack.
"""

__version__ = "0.1.0"
