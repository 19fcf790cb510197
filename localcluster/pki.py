"""The local control plane's certificates: one CA, the API server's serving cert, an admin client.

Every component talks to the API server as ``system:masters`` (a test cluster on
loopback has one user); the service-account key pair signs pod tokens.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

SERVICE_IP = "10.96.0.1"
"""The ``kubernetes`` Service's cluster IP (first address of ``--service-cluster-ip-range``)."""
VALID = datetime.timedelta(days=30)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def write_key(key: rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _name(common: str, org: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


def _cert(subject, issuer, key, signer, *, ca=False, sans=(), usage=None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def self_signed(common: str, *, dns_names: Sequence[str] = ()) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    """A key and its self-signed CA certificate for ``common`` (and ``dns_names``): a loopback test server's."""
    key, name = _key(), _name(common)
    return key, _cert(name, name, key, key, ca=True, sans=[x509.DNSName(n) for n in dns_names])


def write(directory: Path) -> None:
    """Write ca.crt, apiserver.{crt,key}, admin.{crt,key} and sa.{key,pub} into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("eks-gpu-local-ca")
    ca = _cert(ca_name, ca_name, ca_key, ca_key, ca=True)
    (directory / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    sans = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default.svc"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(SERVICE_IP)),
    ]
    server_key = _key()
    server = _cert(
        _name("kube-apiserver"),
        ca_name,
        server_key,
        ca_key,
        sans=sans,
        usage=x509.ExtendedKeyUsageOID.SERVER_AUTH,
    )
    (directory / "apiserver.crt").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    write_key(server_key, directory / "apiserver.key")

    admin_key = _key()
    admin = _cert(
        _name("admin", "system:masters"),
        ca_name,
        admin_key,
        ca_key,
        usage=x509.ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    (directory / "admin.crt").write_bytes(admin.public_bytes(serialization.Encoding.PEM))
    write_key(admin_key, directory / "admin.key")

    sa_key = _key()
    write_key(sa_key, directory / "sa.key")
    (directory / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
