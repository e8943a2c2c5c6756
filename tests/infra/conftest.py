import os

# The CDK's jsii runtime prints a banner on every start about Node 20's support window.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
