//! `.mcpb` signatures: the block `mcpb sign` (npm `@anthropic-ai/mcpb`) appends after the zip.
//!
//! The file is `ZIP || "MCPB_SIG_V1" || len (u32, little-endian) || PKCS#7 || "MCPB_SIG_END"`.
//! The PKCS#7 (CMS) `SignedData` is detached: it signs the bytes before `MCPB_SIG_V1` through
//! signed attributes (`contentType` data, `messageDigest` SHA-256 of those bytes, `signingTime`),
//! with an RSA key whose certificate (and any intermediates) it carries.
//!
//! A block that is present must verify, else the bundle is refused: the digest must match the
//! zip, and the signature over the signed attributes must verify with the signer's certificate.
//! Who signed is then the certificate's subject, and whether anyone vouches for it is the
//! system's CA store (`rustls-native-certs`: `/etc/ssl/certs`, `SSL_CERT_FILE`), checked for
//! code signing as `mcpb verify` does on Linux (`openssl verify -purpose codesigning`). A
//! self-signed or otherwise untrusted certificate is said so; it does not stop the install.
//!
//! The signed attributes are verified as the bytes they were signed as: `mcpb` (node-forge)
//! does not sort them as DER would, so they are never decoded and encoded again.

use der::asn1::{AnyRef, ObjectIdentifier};
use der::{Decode, Encode, Reader, SliceReader, Tag, Tagged};
use rustls_pki_types::{CertificateDer, SignatureVerificationAlgorithm, UnixTime};
use sha2::Digest;
use x509_cert::Certificate;

const HEADER: &[u8] = b"MCPB_SIG_V1";
const FOOTER: &[u8] = b"MCPB_SIG_END";
/// A signature with its certificates is a few KiB; a tail of 1 MiB holds any real one.
const MAX_BLOCK: u64 = 1024 * 1024;

const SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
/// id-kp-codeSigning (1.3.6.1.5.5.7.3.3), DER content octets.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// What a bundle's signature says, once checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Signature {
    /// No signature block.
    Unsigned,
    /// The block verifies: the zip is what the certificate's key signed.
    Verified {
        /// The certificate's subject: common name and organization, as the certificate says.
        signer: String,
        /// The certificate's issuer, the same way.
        issuer: String,
        /// Who vouches for the certificate.
        trust: Trust,
    },
}

/// Whether the system vouches for a verified signature's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trust {
    /// It chains to a CA of the system's store, for code signing.
    System,
    /// It is its own issuer, and not in the system's store.
    SelfSigned,
    /// It chains to nothing the system trusts (why, as webpki says).
    Untrusted(String),
}

impl Signature {
    /// The consent's line.
    pub(crate) fn describe(&self) -> String {
        match self {
            Signature::Unsigned => "none: the bundle is unsigned, so nothing says who made it".to_owned(),
            Signature::Verified { signer, issuer, trust } => {
                let unvouched =
                    "the bundle is unchanged since that key signed it, but nothing vouches for who holds the key";
                match trust {
                    Trust::System => format!(
                        "signed by {signer}, verified; its certificate is from {issuer}, which this system's \
                         certificate store trusts for code signing"
                    ),
                    Trust::SelfSigned => format!(
                        "signed by {signer}, verified; the certificate is self-signed and not trusted by this \
                         system's certificate store: {unvouched}"
                    ),
                    Trust::Untrusted(why) => format!(
                        "signed by {signer}, verified; the certificate (issued by {issuer}) is not trusted by this \
                         system's certificate store ({why}): {unvouched}"
                    ),
                }
            }
        }
    }
}

impl Signature {
    /// A few words for the line that says what was installed.
    pub(crate) fn short(&self) -> String {
        match self {
            Signature::Unsigned => "unsigned".to_owned(),
            Signature::Verified { signer, trust, .. } => match trust {
                Trust::System => format!("signed by {signer}"),
                Trust::SelfSigned => format!("signed by {signer} (self-signed, not trusted by this system)"),
                Trust::Untrusted(_) => format!("signed by {signer} (not trusted by this system)"),
            },
        }
    }
}

/// A bundle file's signature, and how many of its bytes are the zip (the signed bytes, when
/// signed): only those are read as the zip, so nothing in the block can add an entry.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The zip's length.
    pub zip_len: u64,
    /// What the signature says.
    pub signature: Signature,
}

/// Finds and checks the signature block of a bundle's bytes (the file read once: what is
/// checked is what is unpacked); a block that is there but does not verify (the zip changed
/// after signing, a broken block) is an error that says so.
pub(crate) fn check(bytes: &[u8]) -> Result<Checked, String> {
    let len = bytes.len();
    let tail_len = len.min(MAX_BLOCK as usize);
    let tail = &bytes[len - tail_len..];
    let Some(body) = tail.strip_suffix(FOOTER) else {
        return Ok(Checked { zip_len: len as u64, signature: Signature::Unsigned });
    };
    // The last header whose length field spans exactly to the footer.
    let at = (0..body.len().saturating_sub(HEADER.len() + 4)).rev().find(|&at| {
        let rest = &body[at..];
        rest.starts_with(HEADER) && {
            let n = &rest[HEADER.len()..HEADER.len() + 4];
            u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize == rest.len() - HEADER.len() - 4
        }
    });
    let Some(at) = at else {
        return Err(refused("its signature block (after MCPB_SIG_END) has no matching MCPB_SIG_V1 header"));
    };
    let pkcs7 = &body[at + HEADER.len() + 4..];
    let zip_len = len - tail_len + at;
    let digest = sha2::Sha256::digest(&bytes[..zip_len]);
    let signature = verify(pkcs7, digest.as_slice(), UnixTime::now())?;
    Ok(Checked { zip_len: zip_len as u64, signature })
}

fn refused(why: &str) -> String {
    format!(
        "the bundle's signature does not verify: {why}. It was changed after it was signed, or the signature \
         is broken; refused, nothing was installed. Get the bundle again from where it is published"
    )
}

/// The TLVs inside a constructed value.
fn children(any: AnyRef<'_>) -> der::Result<Vec<AnyRef<'_>>> {
    let mut reader = SliceReader::new(any.value())?;
    let mut out = Vec::new();
    while !reader.is_finished() {
        out.push(AnyRef::decode(&mut reader)?);
    }
    Ok(out)
}

/// An OCTET STRING's bytes.
fn octets(any: AnyRef<'_>) -> Option<&[u8]> {
    (any.tag() == Tag::OctetString).then(|| any.value())
}

fn context(n: u32, constructed: bool) -> Tag {
    Tag::ContextSpecific { constructed, number: der::TagNumber(n) }
}

/// The parts of a `SignedData` that are checked.
struct Parsed<'a> {
    certificates: Vec<AnyRef<'a>>,
    issuer_and_serial: AnyRef<'a>,
    digest_alg: ObjectIdentifier,
    signed_attrs: AnyRef<'a>,
    signature_alg: ObjectIdentifier,
    signature: &'a [u8],
}

fn parse(pkcs7: &[u8]) -> Result<Parsed<'_>, String> {
    let bad = |what: &str| format!("its PKCS#7 block is not a signature mcpb makes ({what})");
    let der = |e: der::Error| bad(&e.to_string());
    let info = AnyRef::from_der(pkcs7).map_err(der)?;
    let [kind, content] = children(info).map_err(der)?[..] else { return Err(bad("ContentInfo")) };
    if kind.decode_as::<ObjectIdentifier>().map_err(der)? != SIGNED_DATA || content.tag() != context(0, true) {
        return Err(bad("not SignedData"));
    }
    let [signed] = children(content).map_err(der)?[..] else { return Err(bad("SignedData")) };
    let fields = children(signed).map_err(der)?;
    // version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos
    let (Some(encap), Some(signer_infos)) = (fields.get(2), fields.last()) else { return Err(bad("SignedData")) };
    let encap = children(*encap).map_err(der)?;
    if encap.len() != 1 {
        return Err(bad("the signature is not detached"));
    }
    let certificates = match fields.iter().find(|f| f.tag() == context(0, true)) {
        Some(set) => children(*set).map_err(der)?,
        None => Vec::new(),
    };
    let signers = children(*signer_infos).map_err(der)?;
    let [signer] = signers[..] else { return Err(bad(&format!("{} signers, not one", signers.len()))) };
    let parts = children(signer).map_err(der)?;
    // version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm, signature, [1] unsigned
    let [_, sid, digest_alg, signed_attrs, signature_alg, signature, ..] = parts[..] else {
        return Err(bad("SignerInfo without signed attributes"));
    };
    if sid.tag() != Tag::Sequence || signed_attrs.tag() != context(0, true) {
        return Err(bad("SignerInfo without issuer and serial number or signed attributes"));
    }
    let alg = |a: AnyRef<'_>| -> Result<ObjectIdentifier, String> {
        children(a).map_err(der)?.first().ok_or_else(|| bad("algorithm"))?.decode_as().map_err(der)
    };
    Ok(Parsed {
        certificates,
        issuer_and_serial: sid,
        digest_alg: alg(digest_alg)?,
        signed_attrs,
        signature_alg: alg(signature_alg)?,
        signature: octets(signature).ok_or_else(|| bad("signature"))?,
    })
}

/// Verifies a detached `SignedData` over content whose SHA-256 is `digest`.
fn verify(pkcs7: &[u8], digest: &[u8], now: UnixTime) -> Result<Signature, String> {
    let p = parse(pkcs7).map_err(|e| refused(&e))?;
    let der = |e: der::Error| refused(&format!("its PKCS#7 block cannot be read ({e})"));
    if p.digest_alg != SHA256 {
        return Err(refused(&format!("its digest algorithm {} is not SHA-256", p.digest_alg)));
    }
    // The signed attributes: contentType is data, messageDigest is the zip's.
    let mut content_type = None;
    let mut message_digest = None;
    for attr in children(p.signed_attrs).map_err(der)? {
        let [oid, values] = children(attr).map_err(der)?[..] else { return Err(refused("a malformed attribute")) };
        let oid: ObjectIdentifier = oid.decode_as().map_err(der)?;
        let value = children(values).map_err(der)?.first().copied();
        if oid == CONTENT_TYPE {
            content_type = value.map(|v| v.decode_as::<ObjectIdentifier>()).transpose().map_err(der)?;
        } else if oid == MESSAGE_DIGEST {
            message_digest = value.and_then(octets);
        }
    }
    if content_type != Some(DATA) {
        return Err(refused("its signed attributes do not say the content is data"));
    }
    if message_digest != Some(digest) {
        return Err(refused("the zip's SHA-256 is not the one that was signed"));
    }

    // The signer's certificate: the one whose issuer and serial number the signer names.
    let [sid_issuer, sid_serial] = children(p.issuer_and_serial).map_err(der)?[..] else {
        return Err(refused("a malformed signer identifier"));
    };
    let (sid_issuer, sid_serial) = (sid_issuer.to_der().map_err(der)?, sid_serial.value());
    let mut certs = Vec::new();
    for c in &p.certificates {
        let bytes = c.to_der().map_err(der)?;
        let cert = Certificate::from_der(&bytes).map_err(der)?;
        certs.push((bytes, cert));
    }
    let signer_at = certs
        .iter()
        .position(|(_, c)| {
            c.tbs_certificate().serial_number().as_bytes() == sid_serial
                && c.tbs_certificate().issuer().to_der().is_ok_and(|i| i == sid_issuer)
        })
        .ok_or_else(|| refused("it does not carry the signer's certificate"))?;
    let (signer_der, signer) = &certs[signer_at];
    let signer_der = CertificateDer::from(signer_der.as_slice());
    let end_entity = webpki::EndEntityCert::try_from(&signer_der)
        .map_err(|e| refused(&format!("the signer's certificate cannot be used ({e})")))?;

    // The signature is over the signed attributes as a SET (their [0] tag replaced).
    let signed = AnyRef::new(Tag::Set, p.signed_attrs.value()).and_then(|a| a.to_der()).map_err(der)?;
    let alg: &dyn SignatureVerificationAlgorithm = match p.signature_alg {
        a if a == RSA || a == SHA256_WITH_RSA => webpki::aws_lc_rs::RSA_PKCS1_2048_8192_SHA256,
        other => return Err(refused(&format!("its signature algorithm {other} is not RSA with SHA-256"))),
    };
    end_entity
        .verify_signature(alg, &signed, p.signature)
        .map_err(|e| refused(&format!("the signature does not match the signer's key ({e})")))?;

    let tbs = signer.tbs_certificate();
    let self_issued = tbs.issuer() == tbs.subject();
    let intermediates: Vec<CertificateDer<'_>> = certs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != signer_at)
        .map(|(_, (bytes, _))| CertificateDer::from(bytes.as_slice()))
        .collect();
    let trust = match system_trust(&end_entity, &intermediates, now) {
        Ok(()) => Trust::System,
        Err(_) if self_issued => Trust::SelfSigned,
        Err(why) => Trust::Untrusted(why),
    };
    Ok(Signature::Verified { signer: name(tbs.subject()), issuer: name(tbs.issuer()), trust })
}

/// Whether the certificate chains to a CA in the system's store, for code signing (an
/// extended key usage, when the certificate lists any, must include it).
fn system_trust(
    cert: &webpki::EndEntityCert<'_>,
    intermediates: &[CertificateDer<'_>],
    now: UnixTime,
) -> Result<(), String> {
    let found = rustls_native_certs::load_native_certs();
    let anchors: Vec<_> = found.certs.iter().filter_map(|c| webpki::anchor_from_trusted_cert(c).ok()).collect();
    if anchors.is_empty() {
        return Err("the system's certificate store is empty or cannot be read".to_owned());
    }
    cert.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        intermediates,
        now,
        webpki::KeyUsage::required_if_present(CODE_SIGNING),
        None,
        None,
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// `"Common Name" (Organization)`, each cut to one short line (they are the signer's words).
fn name(n: &x509_cert::name::Name) -> String {
    let cn = n.common_name().ok().flatten().map(|s| s.value().into_owned());
    let o = n.organization().ok().flatten().map(|s| s.value().into_owned());
    let line = |s: &str| crate::consent::one_line_max(s, 80);
    match (cn, o) {
        (Some(cn), Some(o)) => format!("{:?} ({})", line(&cn), line(&o)),
        (Some(cn), None) => format!("{:?}", line(&cn)),
        (None, Some(o)) => format!("an unnamed certificate of {}", line(&o)),
        (None, None) => "a certificate with no name".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_block_is_refused_not_taken_as_unsigned() {
        let write = |_name: &str, tail: &[u8]| {
            let mut bytes = b"PK\x05\x06 not really a zip".to_vec();
            bytes.extend_from_slice(tail);
            bytes
        };
        let plain = check(&write("plain", b"")).unwrap();
        assert_eq!(plain.signature, Signature::Unsigned);
        assert_eq!(plain.zip_len, 21);

        let mut garbage = HEADER.to_vec();
        garbage.extend_from_slice(&5u32.to_le_bytes());
        garbage.extend_from_slice(b"\x30\x03\x02\x01\x01");
        garbage.extend_from_slice(FOOTER);
        let err = check(&write("garbage", &garbage)).unwrap_err();
        assert!(err.contains("does not verify") && err.contains("nothing was installed"), "{err}");

        let err = check(&write("footer-only", FOOTER)).unwrap_err();
        assert!(err.contains("no matching MCPB_SIG_V1"), "{err}");

        // A length that runs past the end.
        let mut long = HEADER.to_vec();
        long.extend_from_slice(&u32::MAX.to_le_bytes());
        long.extend_from_slice(FOOTER);
        assert!(check(&write("long", &long)).is_err());
    }
}
