"""The AWS CDK app that deploys Ferry, one module per construct."""
