#!/usr/bin/env python3
"""Generates clusterdeployments.hive.example.io.yaml, the large CRD used by the e2e tests.

The schema is written for kplane's tests: a ClusterDeployment-like resource of realistic size
(per-platform sections with many fields, enums, patterns, bounds, defaults, keyed lists, status
with conditions). It is not copied from any project. Re-generate with

    python3 generate_clusterdeployment.py > clusterdeployments.hive.example.io.yaml

(needs PyYAML). The generated YAML is committed; the tests never run this script.
"""

import sys
import textwrap

import yaml

# ---------------------------------------------------------------------------------------------
# Schema building blocks


def node(kind, desc, **kw):
    n = {"type": kind}
    if desc:
        n["description"] = desc
    for key, value in kw.items():
        n[key.replace("_", "-") if key.startswith("x_") else key] = value
    return n


def s(desc, **kw):
    return node("string", desc, **kw)


def i(desc, fmt="int32", **kw):
    return node("integer", desc, format=fmt, **kw)


def b(desc, **kw):
    return node("boolean", desc, **kw)


def obj(desc, props, required=None, **kw):
    n = node("object", desc, properties=props, **kw)
    if required:
        n["required"] = sorted(required)
    return n


def arr(desc, items, **kw):
    return node("array", desc, items=items, **kw)


def str_set(desc, item_desc=None, **kw):
    return arr(desc, s(item_desc) if item_desc else {"type": "string"},
               x_kubernetes_list_type="set", **kw)


def keyed(desc, item, keys, **kw):
    return arr(desc, item, x_kubernetes_list_type="map", x_kubernetes_list_map_keys=keys, **kw)


def str_map(desc, **kw):
    return node("object", desc, additionalProperties={"type": "string"}, **kw)


def local_ref(desc, what="object"):
    return obj(
        desc,
        {"name": s(f"Name of the referenced {what} in the same namespace.", minLength=1,
                   maxLength=253)},
        required=["name"],
        x_kubernetes_map_type="atomic",
    )


def secret_ref(desc):
    return local_ref(desc, "Secret")


def configmap_ref(desc):
    return local_ref(desc, "ConfigMap")


def label_selector(desc):
    return obj(
        desc,
        {
            "matchLabels": str_map(
                "Labels an object must carry, all of them, for the selector to match it."),
            "matchExpressions": arr(
                "Set-based requirements; all of them must hold for an object to match.",
                obj(
                    "One requirement on the value of a label.",
                    {
                        "key": s("The label key the requirement applies to.", maxLength=317),
                        "operator": s("How the key relates to the values.",
                                      enum=["In", "NotIn", "Exists", "DoesNotExist"]),
                        "values": arr(
                            "Values for In and NotIn; must be empty for Exists and "
                            "DoesNotExist.",
                            {"type": "string"},
                            x_kubernetes_list_type="atomic",
                        ),
                    },
                    required=["key", "operator"],
                ),
                x_kubernetes_list_type="atomic",
            ),
        },
        x_kubernetes_map_type="atomic",
    )


def conditions(desc, owner):
    return keyed(
        desc,
        obj(
            f"One aspect of the {owner}'s state, as observed by its controller.",
            {
                "type": s("Type of the condition, in CamelCase, unique within the list.",
                          pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*"
                                  r"[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                                  r"[A-Za-z0-9])$",
                          maxLength=316),
                "status": s("Whether the condition holds.", enum=["True", "False", "Unknown"]),
                "reason": s("A CamelCase, machine-readable reason for the last transition.",
                            maxLength=1024, pattern=r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?)?$"),
                "message": s("A human-readable explanation of the last transition.",
                             maxLength=32768),
                "lastProbeTime": s("When the controller last checked the condition.",
                                   format="date-time"),
                "lastTransitionTime": s("When the condition last changed its status.",
                                        format="date-time"),
                "observedGeneration": i("The .metadata.generation the condition was computed "
                                        "from.", fmt="int64", minimum=0),
            },
            required=["type", "status"],
        ),
        ["type"],
    )


def env_vars(desc):
    return keyed(
        desc,
        obj(
            "One environment variable.",
            {
                "name": s("Name of the variable; must be a C identifier.",
                          pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"),
                "value": s("Literal value of the variable. Defaults to the empty string."),
                "valueFrom": obj(
                    "Where to read the value from instead of value.",
                    {
                        "secretKeyRef": obj(
                            "A key of a Secret in the ClusterDeployment's namespace.",
                            {
                                "name": s("Name of the Secret."),
                                "key": s("Key within the Secret's data."),
                                "optional": b("Whether the Secret or key may be missing."),
                            },
                            required=["name", "key"],
                        ),
                        "configMapKeyRef": obj(
                            "A key of a ConfigMap in the ClusterDeployment's namespace.",
                            {
                                "name": s("Name of the ConfigMap."),
                                "key": s("Key within the ConfigMap's data."),
                                "optional": b("Whether the ConfigMap or key may be missing."),
                            },
                            required=["name", "key"],
                        ),
                    },
                ),
            },
            required=["name"],
        ),
        ["name"],
    )


def resource_tags(desc):
    return keyed(
        desc,
        obj(
            "A key/value pair attached to every cloud resource the installer creates.",
            {
                "key": s("Tag key.", minLength=1, maxLength=128),
                "value": s("Tag value.", maxLength=256),
            },
            required=["key", "value"],
        ),
        ["key"],
        maxItems=50,
    )


ZONES = str_set("Availability zones machines are spread across. Empty means every zone of "
                "the region.", "The name of one zone.")

# ---------------------------------------------------------------------------------------------
# Platforms

AWS_MACHINE = obj(
    "Defaults for every AWS machine pool of the cluster unless a pool overrides them.",
    {
        "type": s("The EC2 instance type, for example m6i.xlarge.",
                  pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"),
        "zones": ZONES,
        "amiID": s("The AMI the machines boot from. Defaults to the release's image.",
                   pattern=r"^ami-[0-9a-f]{8,17}$"),
        "rootVolume": obj(
            "The root EBS volume of each machine.",
            {
                "size": i("Size in GiB.", minimum=8, maximum=16384, default=120),
                "type": s("The EBS volume type.",
                          enum=["gp2", "gp3", "io1", "io2", "st1", "sc1", "standard"],
                          default="gp3"),
                "iops": i("Provisioned IOPS; only for io1, io2 and gp3.", minimum=0,
                          maximum=256000),
                "throughput": i("Throughput in MiB/s; only for gp3.", minimum=125,
                                maximum=1000),
                "kmsKeyARN": s("The KMS key that encrypts the volume. Defaults to the "
                               "account's EBS default key.", pattern=r"^arn:aws[a-z-]*:kms:.+$"),
            },
            required=["size"],
        ),
        "spotMarketOptions": obj(
            "Run the machines as spot instances. Absent means on-demand.",
            {"maxPrice": s("Highest hourly price to pay, in USD. Empty means the on-demand "
                           "price.", pattern=r"^[0-9]+(\.[0-9]+)?$")},
        ),
        "metadataService": obj(
            "Settings of the EC2 instance metadata service.",
            {"authentication": s("Whether IMDSv2 session tokens are required.",
                                 enum=["Required", "Optional"], default="Required")},
        ),
        "additionalSecurityGroupIDs": str_set(
            "Security groups attached to the machines in addition to the ones the "
            "installer creates.", maxItems=10),
        "iamProfile": s("An existing IAM instance profile to use instead of creating one."),
        "iamRole": s("An existing IAM role to use instead of creating one."),
    },
)

AWS = obj(
    "Install and run the cluster on Amazon Web Services.",
    {
        "region": s("The AWS region, for example us-east-1.",
                    pattern=r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$"),
        "credentialsSecretRef": secret_ref(
            "A Secret with the keys aws_access_key_id and aws_secret_access_key used to "
            "provision and deprovision the cluster."),
        "credentialsAssumeRole": obj(
            "A role to assume with the platform-wide credentials instead of using a "
            "per-cluster Secret.",
            {
                "roleARN": s("ARN of the role to assume.", pattern=r"^arn:aws[a-z-]*:iam::"
                             r"[0-9]{12}:role/.+$"),
                "externalID": s("The external ID the role's trust policy requires.",
                                maxLength=1224),
            },
            required=["roleARN"],
        ),
        "userTags": str_map("Tags added to every AWS resource the installer creates.",
                            maxProperties=50),
        "propagateUserTags": b("Whether the in-cluster operators also apply userTags to the "
                               "resources they create.", default=False),
        "defaultMachinePlatform": AWS_MACHINE,
        "subnets": str_set("Existing subnets to install into. Empty means the installer "
                           "creates a VPC.", "A subnet ID.", maxItems=64),
        "hostedZone": s("An existing private Route 53 hosted zone for the cluster's "
                        "records."),
        "hostedZoneRole": s("A role to assume when changing hostedZone (shared VPC "
                            "installs)."),
        "lbType": s("The kind of load balancer in front of the default ingress.",
                    enum=["Classic", "NLB"], default="NLB"),
        "serviceEndpoints": keyed(
            "Custom endpoints for AWS services, for regions or partitions the SDK does not "
            "know.",
            obj(
                "The endpoint of one AWS service.",
                {
                    "name": s("The service's endpoint prefix, for example ec2 or s3.",
                              pattern=r"^[a-z0-9-]+$"),
                    "url": s("The URL to use for the service.", pattern=r"^https://.+$"),
                },
                required=["name", "url"],
            ),
            ["name"],
        ),
        "privateLink": obj(
            "Reach the cluster's API over AWS PrivateLink from the hub account.",
            {
                "enabled": b("Whether PrivateLink access is set up.", default=False),
                "additionalAllowedPrincipals": str_set(
                    "Extra IAM principals allowed to connect to the endpoint service.",
                    "An IAM principal ARN."),
            },
            required=["enabled"],
        ),
    },
    required=["region"],
)

AZURE_MACHINE = obj(
    "Defaults for every Azure machine pool of the cluster unless a pool overrides them.",
    {
        "type": s("The VM size, for example Standard_D8s_v5.", pattern=r"^Standard_[A-Za-z0-9_]+$"),
        "zones": ZONES,
        "encryptionAtHost": b("Encrypt temporary disks and caches on the VM host.",
                              default=False),
        "osDisk": obj(
            "The operating system disk of each VM.",
            {
                "diskSizeGB": i("Size in GB.", minimum=32, maximum=32767, default=128),
                "diskType": s("The managed disk SKU.",
                              enum=["Standard_LRS", "Premium_LRS", "StandardSSD_LRS",
                                    "PremiumV2_LRS", "UltraSSD_LRS"],
                              default="Premium_LRS"),
                "diskEncryptionSet": obj(
                    "A disk encryption set with customer-managed keys.",
                    {
                        "subscriptionId": s("Subscription of the set. Defaults to the "
                                            "cluster's.", format="uuid"),
                        "resourceGroup": s("Resource group of the set.", maxLength=90),
                        "name": s("Name of the set.", maxLength=80),
                    },
                    required=["resourceGroup", "name"],
                ),
            },
            required=["diskSizeGB"],
        ),
        "osImage": obj(
            "A marketplace image to boot from instead of the release's image.",
            {
                "publisher": s("Image publisher."),
                "offer": s("Image offer."),
                "sku": s("Image SKU."),
                "version": s("Image version."),
                "plan": s("Whether the image carries a purchase plan.",
                          enum=["WithPurchasePlan", "NoPurchasePlan"]),
            },
            required=["publisher", "offer", "sku", "version"],
        ),
        "vmNetworkingType": s("Whether accelerated networking is enabled.",
                              enum=["Accelerated", "Basic"]),
        "ultraSSDCapability": s("Whether Ultra SSD data disks can be attached.",
                                enum=["Enabled", "Disabled"]),
    },
)

AZURE = obj(
    "Install and run the cluster on Microsoft Azure.",
    {
        "region": s("The Azure location, for example westeurope.", pattern=r"^[a-z0-9]+$"),
        "credentialsSecretRef": secret_ref(
            "A Secret with osServicePrincipal.json, the service principal used to provision "
            "and deprovision the cluster."),
        "baseDomainResourceGroupName": s("The resource group holding the base domain's "
                                         "public DNS zone.", maxLength=90),
        "resourceGroupName": s("The resource group to install into. Defaults to one named "
                               "after the infrastructure ID.", maxLength=90,
                               pattern=r"^[-\w\._\(\)]+$"),
        "cloudName": s("The Azure cloud environment.",
                       enum=["AzurePublicCloud", "AzureUSGovernmentCloud", "AzureChinaCloud",
                             "AzureGermanCloud", "AzureStackCloud"],
                       default="AzurePublicCloud"),
        "networkResourceGroupName": s("Resource group of an existing virtual network.",
                                      maxLength=90),
        "virtualNetwork": s("An existing virtual network to install into."),
        "controlPlaneSubnet": s("Subnet of virtualNetwork for control-plane machines."),
        "computeSubnet": s("Subnet of virtualNetwork for compute machines."),
        "outboundType": s("How machines reach the internet.",
                          enum=["Loadbalancer", "UserDefinedRouting", "NatGateway"],
                          default="Loadbalancer"),
        "armEndpoint": s("The Resource Manager endpoint; only for AzureStackCloud.",
                         pattern=r"^https://.+$"),
        "userTags": str_map("Tags added to every Azure resource the installer creates.",
                            maxProperties=10),
        "defaultMachinePlatform": AZURE_MACHINE,
    },
    required=["region", "baseDomainResourceGroupName", "credentialsSecretRef"],
)

GCP_MACHINE = obj(
    "Defaults for every GCP machine pool of the cluster unless a pool overrides them.",
    {
        "type": s("The machine type, for example n2-standard-8.",
                  pattern=r"^[a-z][a-z0-9]*-[a-z0-9-]+$"),
        "zones": ZONES,
        "osDisk": obj(
            "The boot disk of each instance.",
            {
                "diskType": s("The persistent disk type.",
                              enum=["pd-ssd", "pd-standard", "pd-balanced", "hyperdisk-balanced"],
                              default="pd-ssd"),
                "diskSizeGB": i("Size in GB.", fmt="int64", minimum=16, maximum=65536,
                                default=128),
                "encryptionKey": obj(
                    "A customer-managed key for the disk.",
                    {
                        "kmsKey": obj(
                            "The Cloud KMS key.",
                            {
                                "name": s("Name of the key."),
                                "keyRing": s("Key ring the key belongs to."),
                                "projectID": s("Project of the key ring. Defaults to the "
                                               "cluster's project."),
                                "location": s("Location of the key ring."),
                            },
                            required=["name", "keyRing", "location"],
                        ),
                        "kmsKeyServiceAccount": s("The service account that uses the key.",
                                                  format="email"),
                    },
                ),
            },
            required=["diskSizeGB"],
        ),
        "osImage": obj(
            "A custom image to boot from instead of the release's image.",
            {"name": s("Name of the image."), "project": s("Project holding the image.")},
            required=["name", "project"],
        ),
        "tags": str_set("Network tags added to every instance.", "One network tag.",
                        maxItems=64),
        "secureBoot": s("Shielded VM secure boot.", enum=["Enabled", "Disabled"]),
        "onHostMaintenance": s("What GCE does with the instance during host maintenance.",
                               enum=["Migrate", "Terminate"]),
        "confidentialCompute": s("Confidential VM technology.",
                                 enum=["Enabled", "Disabled", "AMDEncryptedVirtualization",
                                       "AMDEncryptedVirtualizationNestedPaging",
                                       "IntelTrustedDomainExtensions"]),
        "serviceAccount": s("The service account instances run as.", format="email"),
    },
)

GCP = obj(
    "Install and run the cluster on Google Cloud.",
    {
        "projectID": s("The project to install into.",
                       pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"),
        "region": s("The region, for example europe-west4.", pattern=r"^[a-z]+-[a-z]+[0-9]+$"),
        "credentialsSecretRef": secret_ref(
            "A Secret with osServiceAccount.json, the service account key used to provision "
            "and deprovision the cluster."),
        "network": s("An existing VPC network to install into."),
        "networkProjectID": s("The host project of network, for shared VPC installs."),
        "controlPlaneSubnet": s("Subnet of network for control-plane machines."),
        "computeSubnet": s("Subnet of network for compute machines."),
        "defaultMachinePlatform": GCP_MACHINE,
        "userLabels": keyed(
            "Labels added to every GCP resource the installer creates.",
            obj(
                "One label.",
                {
                    "key": s("Label key.", pattern=r"^[a-z][0-9a-z_-]{0,62}$"),
                    "value": s("Label value.", pattern=r"^[0-9a-z_-]{1,63}$"),
                },
                required=["key", "value"],
            ),
            ["key"],
            maxItems=32,
        ),
        "userTags": keyed(
            "Resource Manager tags bound to every GCP resource the installer creates.",
            obj(
                "One tag binding.",
                {
                    "parentID": s("The organization or project the tag key belongs to.",
                                  pattern=r"^(organizations/[0-9]+|projects/[a-z0-9-]+)$"),
                    "key": s("Short name of the tag key.", minLength=1, maxLength=63),
                    "value": s("Short name of the tag value.", minLength=1, maxLength=63),
                },
                required=["parentID", "key", "value"],
            ),
            ["parentID", "key"],
            maxItems=50,
        ),
        "privateServiceConnect": obj(
            "Reach the cluster's API over Private Service Connect.",
            {
                "enabled": b("Whether Private Service Connect access is set up.",
                             default=False),
                "serviceAttachment": obj(
                    "The service attachment published for the API load balancer.",
                    {
                        "subnet": obj(
                            "The NAT subnet of the attachment.",
                            {
                                "cidr": s("CIDR of a subnet to create.",
                                          pattern=r"^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$"),
                                "existing": s("Name of an existing subnet to use."),
                            },
                        ),
                    },
                ),
            },
            required=["enabled"],
        ),
    },
    required=["projectID", "region", "credentialsSecretRef"],
)

OPENSTACK_MACHINE = obj(
    "Defaults for every OpenStack machine pool of the cluster unless a pool overrides them.",
    {
        "flavorName": s("The Nova flavor of the machines."),
        "zones": ZONES,
        "rootVolume": obj(
            "Boot from a Cinder volume instead of the flavor's ephemeral disk.",
            {
                "size": i("Size in GiB.", minimum=1, maximum=65536),
                "types": str_set("Volume types, one per entry of zones or a single one for "
                                 "all.", minItems=1),
                "zones": str_set("Cinder availability zones of the volumes."),
            },
            required=["size", "types"],
        ),
        "additionalNetworkIDs": str_set("Networks attached to the machines in addition to "
                                        "the machine network."),
        "additionalSecurityGroupIDs": str_set("Security groups attached to the machines in "
                                              "addition to the default ones."),
        "serverGroupPolicy": s("The Nova server group policy of each pool.",
                               enum=["affinity", "soft-affinity", "anti-affinity",
                                     "soft-anti-affinity"],
                               default="soft-anti-affinity"),
    },
)

OPENSTACK = obj(
    "Install and run the cluster on OpenStack.",
    {
        "cloud": s("The entry of clouds.yaml in credentialsSecretRef to use.", minLength=1),
        "credentialsSecretRef": secret_ref("A Secret with clouds.yaml."),
        "certificatesSecretRef": secret_ref(
            "A Secret with the CA bundle of the OpenStack endpoints."),
        "externalNetwork": s("The network floating IPs are allocated from."),
        "apiFloatingIP": s("An existing floating IP for the API.", format="ipv4"),
        "ingressFloatingIP": s("An existing floating IP for the default ingress.",
                               format="ipv4"),
        "externalDNS": str_set("DNS servers of the machine subnet.", "An IPv4 address.",
                               maxItems=3),
        "trunkSupport": b("Whether the cloud supports Neutron trunk ports.", default=False),
        "octaviaSupport": b("Whether the cloud provides Octavia load balancers.",
                            default=True),
        "machinesSubnet": s("An existing subnet for the machines.", format="uuid"),
        "loadBalancer": obj(
            "Who manages the API and ingress load balancers.",
            {"type": s("The load balancer model.",
                       enum=["OpenShiftManagedDefault", "UserManaged"],
                       default="OpenShiftManagedDefault")},
        ),
        "failureDomains": keyed(
            "Named failure domains machines can be placed in.",
            obj(
                "One failure domain.",
                {
                    "name": s("Name of the failure domain.", pattern=r"^[a-z0-9-]+$",
                              maxLength=63),
                    "computeAvailabilityZone": s("The Nova availability zone."),
                    "storageAvailabilityZone": s("The Cinder availability zone."),
                    "portTargets": keyed(
                        "Networks to attach ports to.",
                        obj(
                            "One port target.",
                            {
                                "id": s("Identifier of the target within the domain.",
                                        enum=["control-plane", "compute", "ingress"]),
                                "network": obj("The network.",
                                               {"id": s("Network UUID.", format="uuid"),
                                                "name": s("Network name.")}),
                                "fixedIPs": arr(
                                    "Fixed IPs of the port.",
                                    obj("One fixed IP.",
                                        {"subnet": obj("The subnet.",
                                                       {"id": s("Subnet UUID.", format="uuid"),
                                                        "name": s("Subnet name.")})},
                                        required=["subnet"]),
                                    maxItems=4,
                                ),
                            },
                            required=["id", "network"],
                        ),
                        ["id"],
                    ),
                },
                required=["name"],
            ),
            ["name"],
        ),
        "defaultMachinePlatform": OPENSTACK_MACHINE,
    },
    required=["cloud", "credentialsSecretRef"],
)

VSPHERE_MACHINE = obj(
    "Defaults for every vSphere machine pool of the cluster unless a pool overrides them.",
    {
        "numCPUs": i("Virtual CPUs of each VM.", minimum=2, maximum=768, default=4),
        "numCoresPerSocket": i("Cores per virtual socket.", minimum=1, maximum=64,
                               default=4),
        "memoryMB": i("Memory of each VM in MiB.", fmt="int64", minimum=8192,
                      maximum=25165824, default=16384),
        "osDisk": obj("The system disk of each VM.",
                      {"diskSizeGB": i("Size in GiB.", minimum=100, maximum=62914560,
                                       default=120)}),
        "zones": str_set("Names of failureDomains the pool's VMs are spread across."),
    },
)

VSPHERE = obj(
    "Install and run the cluster on VMware vSphere.",
    {
        "vCenter": s("Host name of the vCenter server.", maxLength=255),
        "credentialsSecretRef": secret_ref("A Secret with the vCenter username and password."),
        "certificatesSecretRef": secret_ref("A Secret with the vCenter's CA bundle."),
        "datacenter": s("The datacenter to install into."),
        "defaultDatastore": s("The datastore for VM disks."),
        "folder": s("An existing inventory folder for the VMs.", pattern=r"^/.*?/vm/.*?"),
        "cluster": s("The compute cluster to install into."),
        "network": s("The port group the VMs are attached to."),
        "apiVIPs": str_set("Virtual IPs of the API, one per IP family.", "An IP address.",
                           maxItems=2),
        "ingressVIPs": str_set("Virtual IPs of the default ingress, one per IP family.",
                               "An IP address.", maxItems=2),
        "vcenters": keyed(
            "The vCenter servers the failure domains refer to.",
            obj(
                "Connection details of one vCenter.",
                {
                    "server": s("Host name or address of the vCenter.", maxLength=255),
                    "port": i("HTTPS port.", minimum=1, maximum=32767, default=443),
                    "user": s("User name to log in with."),
                    "datacenters": str_set("Datacenters of this vCenter the cluster uses.",
                                           minItems=1),
                },
                required=["server", "datacenters"],
            ),
            ["server"],
            maxItems=3,
        ),
        "failureDomains": keyed(
            "Regions and zones of the vSphere topology machines are spread over.",
            obj(
                "One failure domain.",
                {
                    "name": s("Name of the failure domain.", maxLength=256),
                    "region": s("The region tag value of the domain.", maxLength=80),
                    "zone": s("The zone tag value of the domain.", maxLength=80),
                    "server": s("The vCenter (an entry of vcenters) serving the domain."),
                    "topology": obj(
                        "Where in the vCenter inventory the domain's VMs live.",
                        {
                            "datacenter": s("Datacenter of the domain."),
                            "computeCluster": s("Path of the compute cluster.",
                                                pattern=r"^/.*?/host/.*?"),
                            "networks": str_set("Port groups of the domain.", minItems=1,
                                                maxItems=10),
                            "datastore": s("Path of the datastore.",
                                           pattern=r"^/.*?/datastore/.*?"),
                            "resourcePool": s("Path of a resource pool.",
                                              pattern=r"^/.*?/resources/.*?"),
                            "folder": s("Path of a VM folder.", pattern=r"^/.*?/vm/.*?"),
                            "template": s("Path of the VM template to clone.",
                                          pattern=r"^/.*?/vm/.*?"),
                        },
                        required=["datacenter", "computeCluster", "networks", "datastore"],
                    ),
                },
                required=["name", "region", "zone", "server", "topology"],
            ),
            ["name"],
        ),
        "defaultMachinePlatform": VSPHERE_MACHINE,
    },
    required=["vCenter", "credentialsSecretRef", "certificatesSecretRef", "datacenter",
              "defaultDatastore"],
)

BAREMETAL = obj(
    "Install on bare-metal hosts managed through their BMCs.",
    {
        "libvirtSSHPrivateKeySecretRef": secret_ref(
            "A Secret with the SSH key to reach the provisioning host's libvirt."),
        "provisioningNetworkInterface": s("NIC of the hosts on the provisioning network."),
        "provisioningNetworkCIDR": s("CIDR of the provisioning network.",
                                     pattern=r"^[0-9a-fA-F:.]+/[0-9]{1,3}$"),
        "hosts": keyed(
            "The hosts to install.",
            obj(
                "One host.",
                {
                    "name": s("Name of the host.", maxLength=63),
                    "role": s("Role of the host.", enum=["master", "worker"]),
                    "bootMACAddress": s("MAC address of the boot NIC.",
                                        pattern=r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"),
                    "bmc": obj("Out-of-band management controller.",
                               {"address": s("URL of the BMC, e.g. redfish://10.0.0.1/..."),
                                "credentialsSecretRef": secret_ref("BMC credentials."),
                                "disableCertificateVerification": b("Skip TLS verification.")},
                               required=["address", "credentialsSecretRef"]),
                    "rootDeviceHints": obj(
                        "How to pick the installation disk.",
                        {"deviceName": s("Linux device name, e.g. /dev/sda."),
                         "minSizeGigabytes": i("Smallest acceptable size in GiB.", minimum=0),
                         "rotational": b("Whether the disk must be rotational.")}),
                },
                required=["name", "bmc", "bootMACAddress"],
            ),
            ["name"],
        ),
    },
    required=["libvirtSSHPrivateKeySecretRef"],
)

IBMCLOUD = obj(
    "Install and run the cluster on IBM Cloud VPC.",
    {
        "accountID": s("The IBM Cloud account the cluster is billed to.",
                       pattern=r"^[0-9a-f]{32}$"),
        "cisInstanceCRN": s("CRN of the Cloud Internet Services instance that serves the "
                            "base domain.", pattern=r"^crn:v1:.+$"),
        "region": s("The VPC region, for example eu-de.", pattern=r"^[a-z]{2}-[a-z]+$"),
        "credentialsSecretRef": secret_ref("A Secret with the ibmcloud_api_key."),
        "resourceGroupName": s("An existing resource group to install into.", maxLength=40),
        "networkResourceGroupName": s("Resource group of an existing VPC.", maxLength=40),
        "vpcName": s("An existing VPC to install into."),
        "controlPlaneSubnets": str_set("Subnets of vpcName for control-plane machines."),
        "computeSubnets": str_set("Subnets of vpcName for compute machines."),
        "defaultMachinePlatform": obj(
            "Defaults for every IBM Cloud machine pool unless a pool overrides them.",
            {
                "type": s("The instance profile, for example bx2-4x16.",
                          pattern=r"^[a-z0-9]+-[0-9]+x[0-9]+$"),
                "zones": ZONES,
                "bootVolume": obj(
                    "The boot volume of each instance.",
                    {"encryptionKey": s("CRN of a Key Protect or Hyper Protect key.",
                                        pattern=r"^crn:v1:.+$")},
                ),
                "dedicatedHosts": keyed(
                    "Dedicated hosts to place instances on, one per zone.",
                    obj(
                        "A dedicated host, existing or to create.",
                        {
                            "name": s("Name of an existing dedicated host."),
                            "profile": s("Profile of a dedicated host to create."),
                        },
                        required=["name"],
                    ),
                    ["name"],
                ),
            },
        ),
    },
    required=["accountID", "region", "credentialsSecretRef"],
)

NUTANIX = obj(
    "Install and run the cluster on Nutanix AOS.",
    {
        "prismCentral": obj(
            "The Prism Central that manages the Prism Elements.",
            {
                "address": s("Host name or address of Prism Central.", maxLength=255),
                "port": i("HTTPS port of Prism Central.", minimum=1, maximum=65535,
                          default=9440),
            },
            required=["address"],
        ),
        "prismElements": keyed(
            "The Prism Elements (clusters) the machines run on.",
            obj(
                "One Prism Element.",
                {
                    "uuid": s("UUID of the Prism Element.", format="uuid"),
                    "name": s("Name of the Prism Element."),
                    "endpoint": obj(
                        "Where the Prism Element answers.",
                        {"address": s("Host name or address.", maxLength=255),
                         "port": i("HTTPS port.", minimum=1, maximum=65535, default=9440)},
                        required=["address"],
                    ),
                },
                required=["uuid", "endpoint"],
            ),
            ["uuid"],
            minItems=1,
        ),
        "subnetUUIDs": str_set("Subnets the machines are attached to.", minItems=1,
                               maxItems=32),
        "credentialsSecretRef": secret_ref("A Secret with the Prism credentials."),
        "certificatesSecretRef": secret_ref("A Secret with the Prism CA bundle."),
        "defaultMachinePlatform": obj(
            "Defaults for every Nutanix machine pool unless a pool overrides them.",
            {
                "cpus": i("vCPUs of each VM.", minimum=2, maximum=128, default=4),
                "coresPerSocket": i("Cores per vCPU socket.", minimum=1, maximum=64,
                                    default=1),
                "memoryMiB": i("Memory of each VM in MiB.", fmt="int64", minimum=8192,
                               default=16384),
                "osDisk": obj("The system disk of each VM.",
                              {"diskSizeGiB": i("Size in GiB.", fmt="int64", minimum=20,
                                                default=120)}),
                "bootType": s("Firmware of the VMs.", enum=["Legacy", "UEFI", "SecureBoot"],
                              default="Legacy"),
                "categories": keyed(
                    "Prism categories attached to the VMs.",
                    obj("One category.",
                        {"key": s("Category key."), "value": s("Category value.")},
                        required=["key", "value"]),
                    ["key"],
                ),
                "project": obj("The Prism project the VMs belong to.",
                               {"type": s("How the project is named.", enum=["name", "uuid"]),
                                "name": s("Project name."),
                                "uuid": s("Project UUID.", format="uuid")},
                               required=["type"]),
            },
        ),
    },
    required=["prismCentral", "prismElements", "subnetUUIDs", "credentialsSecretRef"],
)

PLATFORM = obj(
    "Where the cluster runs. Exactly one platform must be set.",
    {
        "aws": AWS,
        "azure": AZURE,
        "gcp": GCP,
        "openstack": OPENSTACK,
        "vsphere": VSPHERE,
        "baremetal": BAREMETAL,
        "ibmcloud": IBMCLOUD,
        "nutanix": NUTANIX,
        "none": obj("Install without any platform integration.", {}),
    },
    minProperties=1,
    maxProperties=1,
)

# ---------------------------------------------------------------------------------------------
# Spec and status

SPEC = obj(
    "The desired state of the cluster.",
    {
        "clusterName": s("Name of the cluster; combined with baseDomain it forms the "
                         "cluster's DNS domain.", minLength=1, maxLength=54,
                         pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$"),
        "baseDomain": s("The DNS domain the cluster's domain is created under.",
                        maxLength=253,
                        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$"),
        "platform": PLATFORM,
        "pullSecretRef": local_ref("A Secret of type kubernetes.io/dockerconfigjson with the "
                                   "credentials to pull the release images.", "Secret"),
        "installed": b("Whether the cluster has been installed. Set it to true to adopt a "
                       "cluster that already exists.", default=False),
        "manageDNS": b("Whether the controller creates a delegated DNS zone for the cluster.",
                       default=False),
        "preserveOnDelete": b("Keep the cloud resources when the ClusterDeployment is "
                              "deleted.", default=False),
        "powerState": s("Whether the cluster's machines should run.",
                        enum=["Running", "Hibernating"], default="Running"),
        "hibernateAfter": s("How long the cluster runs before it is hibernated, as a Go "
                            "duration such as 8h or 90m.",
                            pattern=r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"),
        "installAttemptsLimit": i("How many installation attempts to make before giving "
                                  "up.", minimum=1, maximum=100, default=3),
        "controlPlaneConfig": obj(
            "How the cluster's API server is exposed.",
            {
                "servingCertificates": obj(
                    "Certificates the API server serves.",
                    {
                        "default": s("The certificateBundles entry used for the default "
                                     "API name."),
                        "additional": keyed(
                            "Certificates for extra API domains.",
                            obj("One extra API domain.",
                                {"name": s("The certificateBundles entry to serve."),
                                 "domain": s("The domain the certificate is for.",
                                             maxLength=253)},
                                required=["name", "domain"]),
                            ["name"],
                        ),
                    },
                ),
                "apiURLOverride": s("A URL to reach the API instead of the one in the admin "
                                    "kubeconfig.", pattern=r"^https://.+$"),
                "apiServerIPOverride": s("An IP to reach the API instead of resolving its "
                                         "name.", format="ipv4"),
            },
        ),
        "ingress": keyed(
            "Ingress controllers to create in the cluster. The first one must be named "
            "default.",
            obj(
                "One ingress controller.",
                {
                    "name": s("Name of the ingress controller.",
                              pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength=63),
                    "domain": s("Domain the controller serves.", maxLength=253),
                    "namespaceSelector": label_selector(
                        "Only routes in namespaces matching this selector are served."),
                    "routeSelector": label_selector(
                        "Only routes matching this selector are served."),
                    "servingCertificate": s("The certificateBundles entry the controller "
                                            "serves."),
                    "replicas": i("Number of router replicas.", minimum=0, maximum=20),
                    "httpErrorCodePages": configmap_ref(
                        "A ConfigMap with custom error pages."),
                },
                required=["name", "domain"],
            ),
            ["name"],
            maxItems=10,
        ),
        "certificateBundles": keyed(
            "Certificates to install in the cluster.",
            obj(
                "One certificate bundle.",
                {
                    "name": s("Name the bundle is referred to by."),
                    "generate": b("Whether the controller generates the certificate.",
                                  default=False),
                    "certificateSecretRef": secret_ref(
                        "A Secret of type kubernetes.io/tls holding the certificate."),
                },
                required=["name", "certificateSecretRef"],
            ),
            ["name"],
        ),
        "provisioning": obj(
            "How the cluster is installed.",
            {
                "installConfigSecretRef": secret_ref(
                    "A Secret with install-config.yaml for the installer."),
                "releaseImage": s("The release image to install.",
                                  pattern=r"^[a-z0-9.-]+(:[0-9]+)?/[^@]+(@sha256:[0-9a-f]{64}"
                                          r"|:[A-Za-z0-9._-]+)$"),
                "imageSetRef": local_ref("A ClusterImageSet naming the release to install.",
                                         "ClusterImageSet"),
                "manifestsConfigMapRef": configmap_ref(
                    "A ConfigMap with extra manifests injected into the installation."),
                "manifestsSecretRef": secret_ref(
                    "A Secret with extra manifests injected into the installation."),
                "sshPrivateKeySecretRef": secret_ref(
                    "A Secret with the SSH key used to gather logs from failed installs."),
                "sshKnownHosts": str_set("known_hosts lines for hosts reached during "
                                         "installation."),
                "installerEnv": env_vars("Extra environment variables of the installer."),
                "installerImageOverride": s("An installer image to use instead of the "
                                            "release's.", maxLength=1024),
            },
        ),
        "clusterPoolRef": obj(
            "The pool this cluster belongs to, if it was created by a ClusterPool.",
            {
                "namespace": s("Namespace of the pool."),
                "poolName": s("Name of the pool."),
                "claimName": s("Name of the claim that took the cluster."),
                "claimedTimestamp": s("When the cluster was claimed.", format="date-time"),
            },
            required=["namespace", "poolName"],
        ),
        "clusterMetadata": obj(
            "Facts about the installed cluster, filled in by the controller after the "
            "install.",
            {
                "clusterID": s("The cluster's unique identifier.", format="uuid"),
                "infraID": s("The prefix of the names of the cluster's cloud resources.",
                             maxLength=27),
                "adminKubeconfigSecretRef": secret_ref("The Secret with the admin kubeconfig."),
                "adminPasswordSecretRef": secret_ref(
                    "The Secret with the kubeadmin password."),
                "platform": obj(
                    "Platform-specific facts.",
                    {
                        "aws": obj("AWS facts.",
                                   {"hostedZoneRole": s("Role used for the hosted zone.")}),
                        "azure": obj("Azure facts.",
                                     {"resourceGroupName": s("The cluster's resource group.")}),
                        "gcp": obj("GCP facts.",
                                   {"networkProjectID": s("The shared VPC host project.")}),
                    },
                ),
            },
            required=["clusterID", "infraID", "adminKubeconfigSecretRef"],
        ),
        "boundServiceAccountSigningKeySecretRef": secret_ref(
            "A Secret with the key that signs bound service account tokens."),
    },
    required=["clusterName", "baseDomain", "platform"],
)

STATUS = obj(
    "The observed state of the cluster.",
    {
        "conditions": conditions("The latest observations of the cluster's state.",
                                 "ClusterDeployment"),
        "apiURL": s("URL of the cluster's API server.", pattern=r"^https://.+$"),
        "webConsoleURL": s("URL of the cluster's web console."),
        "installVersion": s("The version that was installed."),
        "installerImage": s("The installer image that ran."),
        "cliImage": s("The CLI image used to gather logs."),
        "installRestarts": i("How many times the install was restarted.", minimum=0),
        "installStartedTimestamp": s("When the first install attempt started.",
                                     format="date-time"),
        "installedTimestamp": s("When the install finished.", format="date-time"),
        "powerState": s("The machines' current power state.",
                        enum=["Running", "Hibernating", "Resuming", "Stopping", "Unknown"]),
        "provisionRef": local_ref("The provision that installs or installed the cluster.",
                                  "ClusterProvision"),
        "platformStatus": obj(
            "Platform-specific status.",
            {"aws": obj("AWS status.",
                        {"privateLink": obj("PrivateLink status.",
                                            {"vpcEndpointID": s("The VPC endpoint."),
                                             "hostedZoneID": s("The private hosted zone.")})})},
        ),
        "certificateBundles": keyed(
            "What happened to each certificate bundle.",
            obj("Status of one bundle.",
                {"name": s("Name of the bundle."),
                 "generated": b("Whether the certificate has been generated.")},
                required=["name", "generated"]),
            ["name"],
        ),
        "observedGeneration": i("The .metadata.generation last acted on.", fmt="int64",
                                minimum=0),
    },
)

ROOT = obj(
    "A ClusterDeployment describes one cluster to install, adopt or hibernate, and reports "
    "the progress of doing so.",
    {
        "apiVersion": s("APIVersion defines the versioned schema of this representation of "
                        "an object."),
        "kind": s("Kind is a string value representing the REST resource this object "
                  "represents."),
        "metadata": {"type": "object"},
        "spec": SPEC,
        "status": STATUS,
    },
)

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterdeployments.hive.example.io"},
    "spec": {
        "group": "hive.example.io",
        "names": {
            "kind": "ClusterDeployment",
            "listKind": "ClusterDeploymentList",
            "plural": "clusterdeployments",
            "singular": "clusterdeployment",
            "shortNames": ["cd", "cdep"],
            "categories": ["hive"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "InfraID", "type": "string",
                     "jsonPath": ".spec.clusterMetadata.infraID"},
                    {"name": "BaseDomain", "type": "string", "jsonPath": ".spec.baseDomain"},
                    {"name": "Installed", "type": "boolean", "jsonPath": ".spec.installed"},
                    {"name": "PowerState", "type": "string", "jsonPath": ".status.powerState"},
                    {"name": "Version", "type": "string", "priority": 1,
                     "jsonPath": ".status.installVersion"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": ROOT},
            }
        ],
    },
}

# ---------------------------------------------------------------------------------------------
# Output


class Dumper(yaml.SafeDumper):
    pass


def represent_str(dumper, value):
    if len(value) > 72 and " " in value:
        wrapped = "\n".join(textwrap.wrap(value, 72))
        return dumper.represent_scalar("tag:yaml.org,2002:str", wrapped, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


Dumper.add_representer(str, represent_str)
Dumper.ignore_aliases = lambda self, data: True

sys.stdout.write("# Generated by generate_clusterdeployment.py; do not edit by hand.\n")
sys.stdout.write("# A ClusterDeployment-like CRD written for kplane's e2e tests.\n")
yaml.dump(CRD, sys.stdout, Dumper=Dumper, sort_keys=True, default_flow_style=False, width=100,
          allow_unicode=True)
